// OpenTelemetry for the Node host (docs/operations.md): with OTEL_EXPORTER_OTLP_ENDPOINT, an SDK tracer provider whose
// spans are batched to the collector over OTLP/HTTP (JSON), the AsyncLocalStorage context manager (so a SQL statement's
// span is a child of its resolver's, and that of its request's), and a span around every HTTP request. Without it
// nothing here runs and common/tracing.ts makes no span.
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { setTracingEnabled, withSpan } from '../common/tracing.js';

export type TracingSettings = { otlpEndpoint?: string; serviceName: string };

/**
 * Registers the SDK and turns spans on; answers the function that flushes and stops it (undefined: tracing is off).
 * @example const stopTracing = startTracing(config.tracing)
 */
export function startTracing(settings: TracingSettings): (() => Promise<void>) | undefined {
  if (!settings.otlpEndpoint) return undefined;
  const exporter = new OTLPTraceExporter({ url: `${settings.otlpEndpoint}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  setTracingEnabled(true);
  return async () => {
    setTracingEnabled(false);
    await provider.shutdown(); // exports what is still batched
  };
}

type Fetch = (request: Request, ...rest: any[]) => Response | Promise<Response>;

/**
 * The HTTP app's fetch inside a SERVER span per request (continuing a caller's W3C `traceparent` when it sent one),
 * with one debug log line carrying the trace id.
 * @example listen(tracedFetch(app.fetch, logger), ...)
 */
export function tracedFetch(fetch: Fetch, logger: Logger): Fetch {
  return (request, ...rest) => {
    const url = new URL(request.url);
    const parent = propagation.extract(context.active(), Object.fromEntries(request.headers));
    return context.with(parent, () =>
      withSpan(
        `HTTP ${request.method} ${url.pathname}`,
        { 'http.request.method': request.method, 'url.path': url.pathname },
        async () => {
          const res = await fetch(request, ...rest);
          trace.getActiveSpan()?.setAttribute('http.response.status_code', res.status);
          logger.debug({ method: request.method, path: url.pathname, status: res.status }, 'request');
          return res;
        },
        SpanKind.SERVER,
      ),
    );
  };
}
