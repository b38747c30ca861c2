import { AsyncLocalStorage } from "node:async_hooks";
import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, trace, TraceFlags } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace";
import { withoutTrailingSlashes } from "../strings.js";
import type { Logger } from "./logger.js";
import { RepeatingFailure } from "./repeating-failure.js";

/**
 * OpenTelemetry tracing, on only when an OTLP endpoint is configured: spans
 * for each request, each stage run and each upstream attempt, exported over
 * OTLP/HTTP. The provider is passed to the parts that use it rather than
 * registered globally, like every other dependency here. The SDK and the
 * exporter are loaded only when tracing is on: a few MB of memory that a
 * server without a collector never needs.
 */
export interface Tracing {
  /**
   * Starts a span; end it with `endSpan`. Its parent: the span `within` is
   * running, else the caller's W3C `traceparent` when given, else none (a new
   * trace); `root` starts a new trace whatever runs around it.
   */
  start(name: string, kind: "server" | "client" | "internal", attributes?: Attributes, from?: { traceparent?: string; root?: boolean }): Span;
  /** Runs `fn` with `span` as the parent of every span started inside it, however deep (AsyncLocalStorage). */
  within<T>(span: Span, fn: () => T): T;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** Base URL of an OTLP/HTTP collector; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  serviceName: string;
  instanceId: string;
  version: string;
  /** Where an endpoint that refuses or does not answer is said, once per outage (RepeatingFailure). */
  logger: Logger;
}

/** How long one export may take: a collector that does not answer must not hold a shutdown for long. */
const EXPORT_TIMEOUT_MS = 3000;

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

export async function createTracing(options: TracingOptions): Promise<Tracing> {
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, TracerProvider }] = await Promise.all([
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
  ]);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      "service.name": options.serviceName,
      "service.version": options.version,
      "service.instance.id": options.instanceId,
    }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: reportingFailures(
          new OTLPTraceExporter({ url: `${withoutTrailingSlashes(options.endpoint)}/v1/traces`, timeoutMillis: EXPORT_TIMEOUT_MS }),
          new RepeatingFailure(options.logger, "exporting traces"),
        ),
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer("project-zero", options.version);
  const current = new AsyncLocalStorage<Span>();
  return {
    start: (name, kind, attributes, from = {}) => {
      const parent = from.root ? undefined : current.getStore();
      const context = parent ? trace.setSpan(ROOT_CONTEXT, parent) : from.root ? ROOT_CONTEXT : remoteParent(from.traceparent);
      return tracer.startSpan(name, { kind: KINDS[kind], attributes, root: context === ROOT_CONTEXT }, context);
    },
    within: (span, fn) => current.run(span, fn),
    shutdown: () => provider.shutdown(),
  };
}

/** `exporter`, with each export's outcome told to `failures`: spans it could not deliver are dropped, but not silently. */
function reportingFailures(exporter: SpanExporter, failures: RepeatingFailure): SpanExporter {
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0.
        if (result.code === 0) failures.succeeded();
        else failures.failed(result.error ?? new Error("the collector refused the spans"));
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/** `version-traceid-parentid-flags`, lower-case hex (W3C Trace Context); ids of all zeros are invalid. */
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** The context a caller's `traceparent` header names, or the root context when it names none validly. */
function remoteParent(traceparent: string | undefined): Context {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  if (!match) return ROOT_CONTEXT;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === "ff" || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/** Ends a span with its final attributes, marking it failed when `failed` is true. */
export function endSpan(span: Span | undefined, attributes: Attributes, failed = false): void {
  if (!span) return;
  span.setAttributes(attributes);
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
