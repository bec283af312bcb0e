// OpenTelemetry traces (docs/operations.md): spans through @opentelemetry/api for an HTTP request, each root field's
// resolver and each SQL statement. Off by default and free when off: until a host turns tracing on (node/tracing.ts,
// with OTEL_EXPORTER_OTLP_ENDPOINT) every helper here is one boolean test and a direct call, no span, no context.
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

let enabled = false;
const tracer = () => trace.getTracer('lastunit');

/** Whether spans are made in this process (set once by the host that registered an SDK). */
export const tracingEnabled = () => enabled;
/** Turns span creation on or off (node/tracing.ts, after registering the SDK; tests). */
export const setTracingEnabled = (on: boolean) => {
  enabled = on;
};

type Attributes = Record<string, string | number | boolean>;

function ended<T>(span: Span, out: Promise<T>): Promise<T> {
  return out.then(
    (v) => {
      span.end();
      return v;
    },
    (err: unknown) => {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    },
  );
}

/**
 * `fn` inside a span named `name` (the active span while it runs, so spans it starts are its children); with tracing
 * off, just `fn()`.
 * @example await withSpan('graphql Mutation.placeOrder', { 'graphql.field': 'placeOrder' }, () => resolve())
 */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T> | T,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> | T {
  if (!enabled) return fn();
  return tracer().startActiveSpan(name, { kind, attributes }, (span) => {
    try {
      return ended(span, Promise.resolve(fn()));
    } catch (err) {
      return ended(span, Promise.reject(err));
    }
  });
}

/** The statement's first words, e.g. `SELECT place_order` or `UPDATE outbox`: a span name without values. */
export function sqlSpanName(text: string): string {
  const words = text.trim().replace(/\s+/g, ' ').split(' ');
  const verb = (words[0] ?? 'SQL').toUpperCase();
  const call = /\b([a-z_][a-z0-9_]*)\s*\(\s*p_/i.exec(text)?.[1];
  const table = /\b(?:FROM|INTO|UPDATE)\s+([a-z_][a-z0-9_.]*)/i.exec(text)?.[1];
  return `${verb} ${call ?? table ?? ''}`.trim();
}

/** One SQL statement as a client span (db.system postgresql, the statement text without its values). */
export function withSqlSpan<T>(text: string, run: () => Promise<T>): Promise<T> {
  if (!enabled) return run();
  return withSpan(
    sqlSpanName(text),
    { 'db.system.name': 'postgresql', 'db.query.text': text.length > 2000 ? `${text.slice(0, 2000)}...` : text },
    run,
    SpanKind.CLIENT,
  ) as Promise<T>;
}

/** The active span's trace and span ids, for a log line (pino's mixin); empty with tracing off or outside a span. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  if (!enabled) return {};
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

export { SpanKind };
