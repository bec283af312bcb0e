// One truthful role table: the roles the code enforces (ROOT_FIELD_ROLES, resolvers/auth.ts) are the table docs/api.md
// prints, every root field of the schema is in it, and the server refuses exactly what it says, before any field runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isObjectType, getNamedType, type GraphQLField } from 'graphql';
import { KEYS, startTestApp } from './support/app.js';
import { TEST_API_KEYS } from '../kit/keys.js';
import { ROOT_FIELD_ROLES } from '../resolvers/auth.js';
import { ROLES, type Role } from '../common/caller.js';
import { schema } from '../schema/index.js';

const PUBLIC = 'roles_public_key_abcdefghij';
const t = await startTestApp({ keys: [...TEST_API_KEYS, { role: 'public', key: PUBLIC }] });
const keyOf: Record<Exclude<Role, 'partner'>, string> = {
  public: PUBLIC,
  storefront: KEYS.storefront,
  admin: KEYS.admin,
};

/** The table docs/api.md must print, built from the code's map. */
function roleTable(): string {
  const lines = [
    `| operation | ${ROLES.map((r) => `\`${r}\``).join(' | ')} |`,
    `|---|${ROLES.map(() => ':-:').join('|')}|`,
  ];
  for (const [field, roles] of Object.entries(ROOT_FIELD_ROLES))
    lines.push(
      `| \`${field}\` | ${ROLES.map((r) => ((roles as readonly Role[]).includes(r) ? '✓' : '')).join(' | ')} |`,
    );
  return lines.join('\n');
}

describe('the role table', () => {
  it('in docs/api.md is the one the code enforces', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8');
    const block = /<!-- role-table[^>]*-->\n([\s\S]*?)\n<!-- \/role-table -->/.exec(doc)?.[1];
    expect(block, 'docs/api.md has no <!-- role-table --> block').toBeDefined();
    expect(block).toBe(roleTable());
  });

  it('names every root field of the schema, and nothing else', () => {
    const inSchema = (['Query', 'Mutation', 'Subscription'] as const).flatMap((type) =>
      Object.keys(
        schema.getType(type) && isObjectType(schema.getType(type)) ? (schema.getType(type) as any).getFields() : {},
      ).map((f) => `${type}.${f}`),
    );
    expect(Object.keys(ROOT_FIELD_ROLES).sort()).toEqual(inSchema.sort());
  });
});

/** A document running only `field`, its arguments as variables (left unset: a refused field never reads them). */
function documentFor(qualified: string): string {
  const [type, name] = qualified.split('.') as [string, string];
  const field = (schema.getType(type) as any).getFields()[name] as GraphQLField<unknown, unknown>;
  const vars = field.args.map((a) => `$${a.name}: ${a.type.toString()}`);
  const args = field.args.map((a) => `${a.name}: $${a.name}`);
  const selection = isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
  const op = type === 'Query' ? 'query' : 'mutation';
  return `${op}${vars.length ? `(${vars.join(', ')})` : ''} { ${name}${args.length ? `(${args.join(', ')})` : ''}${selection} }`;
}

describe('the server enforces it before any field runs', () => {
  const fields = Object.entries(ROOT_FIELD_ROLES).filter(([f]) => !f.startsWith('Subscription.'));
  for (const role of ['public', 'storefront', 'admin'] as const) {
    it(`${role}: FORBIDDEN exactly for the operations the table does not give it`, async () => {
      for (const [field, roles] of fields) {
        const r = await t.gql(documentFor(field), {}, keyOf[role]);
        const refused = r.status === 403 && r.body.errors?.[0]?.extensions?.code === 'FORBIDDEN';
        expect([field, refused]).toEqual([field, !(roles as readonly Role[]).includes(role)]);
      }
    });
  }

  it('an admin key places and releases orders as a storefront key does', async () => {
    await t.product('ROLE-ADMIN', 3);
    const placed = await t.placeOrder(
      { idempotencyKey: 'role-admin-1', customerId: 'phone-order-7', lines: [{ sku: 'ROLE-ADMIN', quantity: 1 }] },
      KEYS.admin,
    );
    expect(placed).toMatchObject({ userErrors: [], order: { status: 'RESERVED' } });
    expect(await t.inventory('ROLE-ADMIN')).toEqual({ available: 2, reserved: 1, sold: 0 });
    const released = await t.release(placed.order!.id, KEYS.admin);
    expect(released).toMatchObject({ userErrors: [], order: { status: 'CANCELLED' } });
    expect(await t.inventory('ROLE-ADMIN')).toEqual({ available: 3, reserved: 0, sold: 0 });
  });
});
