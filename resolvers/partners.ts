// Thin: publishPartnerDocuments arguments -> one call into the partner documents use case -> payload.
import type { Context } from './context.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

type PublishInput = Parameters<Context['partners']['publish']>[0];

export async function publishPartnerDocuments(ctx: Context, input: PublishInput) {
  requireRole(ctx, 'Mutation.publishPartnerDocuments');
  const r = await ctx.partners.publish(input);
  return { publication: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}
