// Types every other schema file uses: Money, ErrorCode and UserError.
import { builder } from './builder.js';
import { ERROR_CODES } from '../orders/errors.js';
import type { UserErrorShape } from '../resolvers/user-errors.js';

export type MoneyShape = { amount: number; currencyCode: string };

export const Money = builder.objectRef<MoneyShape>('Money').implement({
  description: 'An amount of money in minor units (cents for USD) and its ISO 4217 currency.',
  fields: (t) => ({
    amount: t.exposeInt('amount', { description: 'Amount in minor units, e.g. 1999 for $19.99.' }),
    currencyCode: t.exposeString('currencyCode', { description: 'ISO 4217 code, e.g. USD.' }),
  }),
});

export const ErrorCode = builder.enumType('ErrorCode', {
  description: 'Stable codes for expected failures; clients branch on these, never on messages.',
  // derived from the domain's one list of codes (orders/errors.ts)
  values: ERROR_CODES,
});

export const UserError = builder.objectRef<UserErrorShape>('UserError').implement({
  description: 'An expected failure, returned as data. Nothing was written unless the payload says otherwise.',
  fields: (t) => ({
    code: t.field({ type: ErrorCode, description: 'What went wrong, as a stable code.', resolve: (e) => e.code }),
    field: t.exposeStringList('field', {
      nullable: true,
      description: 'Path to the input field at fault, e.g. ["input","lines","0","quantity"].',
    }),
    message: t.exposeString('message', { description: 'A sentence for humans; may change between versions.' }),
    sku: t.exposeString('sku', { nullable: true, description: 'The SKU concerned, when there is one.' }),
  }),
});
