// The typed boundary: every row and every function answer PostgreSQL sends is parsed here, once, by the schema of its
// shape (zod), before the store maps it to the domain's types. A shape this code does not know (a `kind` it has no
// case for, a missing column) is a fault that names where it came from, never a cast.
import type { z } from 'zod';

/** PostgreSQL answered in a shape this code does not read: the code and the database functions disagree. */
export class UnexpectedRowError extends Error {
  override name = 'UnexpectedRowError';
}

/**
 * `row` as `schema` reads it; throws UnexpectedRowError naming `source` and what did not match.
 * @example const answer = parseRow(ReleaseAnswer, rows[0]?.r, 'release_order()')
 */
export function parseRow<S extends z.ZodType>(schema: S, row: unknown, source: string): z.output<S> {
  const parsed = schema.safeParse(row);
  if (parsed.success) return parsed.data;
  throw new UnexpectedRowError(`${source} answered a shape this code does not know: ${describe(parsed.error, row)}`);
}

/** Every row of a result, each parsed as in parseRow. */
export function parseRows<S extends z.ZodType>(schema: S, rows: readonly unknown[], source: string): z.output<S>[] {
  return rows.map((row) => parseRow(schema, row, source));
}

/** One line: each issue as `path: message`, and the value found where a `kind` was expected. */
function describe(error: z.ZodError, row: unknown): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      const unknownKind = issue.code === 'invalid_union' && path.endsWith('kind');
      const found = unknownKind ? ` (got ${JSON.stringify(valueAt(row, issue.path))})` : '';
      return `${path || 'the row'}: ${issue.message}${found}`;
    })
    .join('; ');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value;
  for (const key of path)
    v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined;
  return v;
}
