import { SpanKind, SpanStatusCode, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import { withoutTrailingSlashes } from "../strings.js";

/**
 * OpenTelemetry tracing, on only when an OTLP endpoint is configured: spans
 * for each request, each stage run and each upstream attempt, exported over
 * OTLP/HTTP. The provider is passed to the parts that use it rather than
 * registered globally, like every other dependency here. The SDK and the
 * exporter are loaded only when tracing is on: a few MB of memory that a
 * server without a collector never needs.
 */
export interface Tracing {
  /** Starts a span; end it with `endSpan`. */
  start(name: string, kind: "server" | "client" | "internal", attributes?: Attributes): Span;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** Base URL of an OTLP/HTTP collector; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  serviceName: string;
  instanceId: string;
  version: string;
}

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
        exporter: new OTLPTraceExporter({ url: `${withoutTrailingSlashes(options.endpoint)}/v1/traces` }),
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer("project-zero", options.version);
  return {
    start: (name, kind, attributes) => tracer.startSpan(name, { kind: KINDS[kind], attributes }),
    shutdown: () => provider.shutdown(),
  };
}

/** Ends a span with its final attributes, marking it failed when `failed` is true. */
export function endSpan(span: Span | undefined, attributes: Attributes, failed = false): void {
  if (!span) return;
  span.setAttributes(attributes);
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
