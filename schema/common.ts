import { builder } from './builder.js';
import type { DomainError } from '../orders/orders.js';

export type MoneyShape = { amount: number; currencyCode: string };

export const Money = builder.objectRef<MoneyShape>('Money').implement({
  description: 'An amount of money in minor units (cents for USD) and its ISO 4217 currency.',
  fields: (t) => ({
    amount: t.exposeInt('amount', { description: 'Amount in minor units, e.g. 1999 for $19.99.' }),
    currencyCode: t.exposeString('currencyCode', { description: 'ISO 4217 code, e.g. USD.' }),
  }),
});

export const ERROR_CODES = [
  'SOLD_OUT',
  'INSUFFICIENT_STOCK',
  'UNKNOWN_SKU',
  'INVALID_INPUT',
  'IDEMPOTENCY_KEY_REUSED',
  'IN_PROGRESS',
  'PAYMENT_DECLINED',
  'RESERVATION_EXPIRED',
  'ALREADY_FINAL',
  'PAYMENT_IN_FLIGHT',
  'NOT_FOUND',
  'STALE',
] as const;

export const ErrorCode = builder.enumType('ErrorCode', {
  description: 'Stable codes for expected failures; clients branch on these, never on messages.',
  values: Object.fromEntries(ERROR_CODES.map((c) => [c, { value: c }])) as Record<(typeof ERROR_CODES)[number], { value: (typeof ERROR_CODES)[number] }>,
});

export const UserError = builder.objectRef<DomainError>('UserError').implement({
  description: 'An expected failure, returned as data. Nothing was written unless the payload says otherwise.',
  fields: (t) => ({
    code: t.field({ type: ErrorCode, description: 'What went wrong, as a stable code.', resolve: (e) => e.code as any }),
    field: t.exposeStringList('field', { nullable: true, description: 'Path to the input field at fault, e.g. ["input","lines","0","quantity"].' }),
    message: t.exposeString('message', { description: 'A sentence for humans; may change between versions.' }),
    sku: t.string({ nullable: true, description: 'The SKU concerned, when there is one.', resolve: (e) => e.sku ?? null }),
  }),
});
