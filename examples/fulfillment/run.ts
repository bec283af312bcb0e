// The fulfillment example as its own process: DATABASE_URL (its own database), WEBHOOK_SECRET (the endpoint's
// whsec_... secret), PORT (0: any). FULFILLMENT_CRASH_AFTER_COMMIT=1 kills the process after its first commit and
// before it answers (the crash test of test/fulfillment.test.ts).
import { startFulfillment } from './consumer.js';

const crash = process.env.FULFILLMENT_CRASH_AFTER_COMMIT === '1';
const s = await startFulfillment({
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/fulfillment',
  secret: process.env.WEBHOOK_SECRET ?? '',
  port: Number(process.env.PORT ?? 0),
  afterCommit: () => {
    if (crash) process.kill(process.pid, 'SIGKILL');
  },
});
console.log(`fulfillment listening on port ${s.port}`);
const stop = () => void s.stop().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
