// The rules live in db/functions as named steps a reader holds in their head (docs/architecture.md, "Where the rules
// live"): no function is over 60 lines, counted in its file from CREATE to the closing quote of its body, and the
// migrated database holds no function the count did not see.
import { afterAll, describe, expect, it } from 'vitest';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { FUNCTIONS_DIR } from '../db/migrate.js';
import { createTestDatabase } from './support/db.js';

const MAX_LINES = 60;
const tdb = await createTestDatabase({ max: 2 });
afterAll(() => tdb.drop());

type SqlFunction = { name: string; file: string; lines: number };

/** Every function a db/functions file creates, with its length in lines from `CREATE` to its body's closing quote. */
function functionsIn(file: string, text: string): SqlFunction[] {
  const sql = text.replace(/\r\n/g, '\n').replace(/--.*$/gm, ''); // comments out, lines kept
  const found: SqlFunction[] = [];
  for (const create of sql.matchAll(/^CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(\w+)/gim)) {
    const opening = /\bAS\s+(\$\w*\$)/gi;
    opening.lastIndex = create.index;
    const body = opening.exec(sql);
    if (!body) throw new Error(`db/functions/${file}: ${create[1]} has no dollar-quoted body`);
    const quote = body[1]!;
    const end = sql.indexOf(quote, body.index + body[0].length);
    if (end < 0) throw new Error(`db/functions/${file}: ${create[1]}'s body is never closed`);
    found.push({ name: create[1]!, file, lines: sql.slice(create.index, end).split('\n').length });
  }
  return found;
}

async function allFunctions(): Promise<SqlFunction[]> {
  const files = (await readdir(FUNCTIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
  const read = (f: string) => readFile(path.join(FUNCTIONS_DIR, f), 'utf8');
  const all = await Promise.all(files.map(async (f) => functionsIn(f, await read(f))));
  return all.flat();
}

describe('SQL functions', () => {
  it(`are named steps: none in db/functions is over ${MAX_LINES} lines`, async () => {
    const functions = await allFunctions();
    expect(functions.length).toBeGreaterThan(0);
    const tooLong = functions.filter((f) => f.lines > MAX_LINES).map((f) => `${f.file} ${f.name}: ${f.lines} lines`);
    expect(tooLong, `split each into named steps (one function per decision)`).toEqual([]);
  });

  it('are all counted: the migrated database holds the functions of db/functions and no other', async () => {
    const { rows } = await tdb.db.query<{ proname: string }>(
      `SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY proname`,
    );
    const counted = (await allFunctions()).map((f) => f.name).sort();
    expect(rows.map((r) => r.proname)).toEqual(counted);
  });
});
