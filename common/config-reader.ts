// Reads configuration sections from an environment (Node: process.env, Workers: the bindings) and lists every problem
// at once, each naming its variable: how both hosts and every command-line entry resolve their settings.
import { z } from 'zod';
import type { SettingMeta } from './config-fields.js';

/** A configuration problem; the message lists every bad variable by name. Entries exit with code 2. */
export class ConfigError extends Error {}

/**
 * A section: a zod object whose fields are settings (`setting` in common/config-fields.ts) or nested sections; it may
 * be refined (checks across its fields, each issue on the path of the field it is about) and then transformed (values
 * that follow from others).
 */
export type Section = z.ZodObject | z.ZodPipe<z.ZodObject, z.ZodTransform>;

type Env = Record<string, unknown>;
type Input = Record<string, unknown>;
type Problem = { variable: string; message: string };

const objectOf = (s: Section): z.ZodObject => (s instanceof z.ZodPipe ? s.in : s);
const variableOf = (field: z.ZodType): string | undefined => (field.meta() as SettingMeta | undefined)?.env;
const isSection = (field: z.ZodType): field is Section =>
  field instanceof z.ZodObject || (field instanceof z.ZodPipe && field.in instanceof z.ZodObject);
const fields = (s: Section) => Object.entries(objectOf(s).shape) as [string, z.ZodType][];

/** The section's input: each field's variable from `env` (empty counts as unset), `refused` ones left unset. */
function inputOf(section: Section, env: Env, refused: Set<string>): Input {
  const input: Input = {};
  for (const [key, field] of fields(section)) {
    const variable = variableOf(field);
    if (variable !== undefined) input[key] = env[variable] === '' || refused.has(variable) ? undefined : env[variable];
    else if (isSection(field)) input[key] = inputOf(field, env, refused);
    else throw new Error(`configuration field "${key}" names no variable (declare it with setting())`);
  }
  return input;
}

/** The variable a field path leads to (a check's issue is on the path of the field it is about). */
function variableAt(section: Section, path: PropertyKey[]): string {
  const field = objectOf(section).shape[String(path[0])] as z.ZodType | undefined;
  if (!field) return '(configuration)';
  return variableOf(field) ?? (isSection(field) ? variableAt(field, path.slice(1)) : String(path[0]));
}

/** Every setting whose own value does not parse, with its problem. */
function fieldProblems(section: Section, input: Input): Problem[] {
  return fields(section).flatMap(([key, field]) => {
    if (isSection(field)) return fieldProblems(field, input[key] as Input);
    const parsed = field.safeParse(input[key]);
    return parsed.success ? [] : parsed.error.issues.map((i) => ({ variable: variableOf(field)!, message: i.message }));
  });
}

/** The values of the settings that parse, without the section's checks (one that does not parse stays undefined). */
function valuesOf(section: Section, input: Input): Input {
  const values: Input = {};
  for (const [key, field] of fields(section))
    values[key] = isSection(field) ? valuesOf(field, input[key] as Input) : field.safeParse(input[key]).data;
  if (!(section instanceof z.ZodPipe)) return values;
  try {
    return section.out.parse(values) as Input;
  } catch {
    return values;
  }
}

/**
 * Every variable a section reads, nested sections included (the docs' configuration table lists them all).
 * @example variablesOf(limitSettings) // ['MAX_BODY_BYTES', 'MAX_DEPTH', ...]
 */
export function variablesOf(section: Section): string[] {
  return fields(section).flatMap(([, field]) => variableOf(field) ?? (isSection(field) ? variablesOf(field) : []));
}

export type ConfigReader = {
  /**
   * The section's values. A variable that does not parse is noted and its default stands in, so the section's checks
   * still run: one start lists every problem. A section its checks refuse still answers its values (for the checks
   * that span sections; a required variable that is unset is undefined then), and `done()` throws.
   */
  read<S extends Section>(section: S): z.output<S>;
  /** Notes a problem found across sections (unless that variable is already refused). */
  problem(variable: string, message: string): void;
  /** Throws every problem noted, one line each, in one ConfigError. */
  done(): void;
};

/**
 * A reader of sections from `env` that collects every problem, each naming its variable. Messages say what is wrong,
 * never quoting a value that may be secret.
 * @example const r = configReader(process.env); const http = r.read(httpSettings); r.done()
 */
export function configReader(env: Env): ConfigReader {
  const problems: Problem[] = [];
  const refused = new Set<string>();
  const note = (p: Problem) => {
    if (!problems.some((q) => q.variable === p.variable && q.message === p.message)) problems.push(p);
  };
  return {
    read<S extends Section>(section: S): z.output<S> {
      const first = section.safeParse(inputOf(section, env, refused));
      if (first.success) return first.data as z.output<S>;
      for (const p of fieldProblems(section, inputOf(section, env, refused))) {
        note(p);
        refused.add(p.variable);
      }
      const input = inputOf(section, env, refused);
      const checked = section.safeParse(input);
      if (checked.success) return checked.data as z.output<S>;
      for (const i of checked.error.issues) {
        const variable = variableAt(section, i.path);
        if (!refused.has(variable)) note({ variable, message: i.message });
      }
      return valuesOf(section, input) as z.output<S>;
    },
    problem(variable, message) {
      if (!refused.has(variable)) note({ variable, message });
    },
    done() {
      if (problems.length)
        throw new ConfigError(
          `invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`,
        );
    },
  };
}

/**
 * One section alone, every problem listed at once (an entry whose settings are one section).
 * @example const c = readSection(process.env, marketplaceSandboxSettings)
 */
export function readSection<S extends Section>(env: Env, section: S): z.output<S> {
  const reader = configReader(env);
  const values = reader.read(section);
  reader.done();
  return values;
}
