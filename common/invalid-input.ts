// Input only the database refuses: PostgreSQL's "data exception" class (SQLSTATE 22xxx: a NUL character, bytes that
// are not UTF-8, a number out of range...). The statement that raised it wrote nothing, and the fault is the input's.
// Validation catches such input first where it can; this names what slipped past it, in our words, never the database's.

/** What the database found wrong with the input, by SQLSTATE. */
const REASONS: Record<string, string> = {
  '22021': 'a text value contains a NUL character or bytes that are not UTF-8',
  '22P05': 'a text value contains a NUL character',
  '22003': 'a number is out of range',
  '22001': 'a text value is too long',
  '22007': 'a date or time is not valid',
  '22008': 'a date or time is out of range',
  '22P02': 'a value is not in the form it must have',
};

/** The SQLSTATE of `err` (or of the error it wraps, as GraphQL errors do), if it is a data exception (22xxx). */
export function invalidInputCode(err: unknown): string | null {
  const code =
    (err as { originalError?: { code?: unknown }; code?: unknown } | null)?.originalError?.code ??
    (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22') ? code : null;
}

/**
 * `invalid input: <what was wrong>` when `err` is a data exception, else null.
 * @example invalidInputMessage({ code: '22021' }) // 'invalid input: a text value contains a NUL character or bytes that are not UTF-8'
 */
export function invalidInputMessage(err: unknown): string | null {
  const code = invalidInputCode(err);
  return code === null ? null : `invalid input: ${REASONS[code] ?? 'a value the database cannot store'}`;
}
