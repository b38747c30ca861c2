import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  createContextValues,
  createHandlerContext,
  createServiceImplSpec,
  type ConnectRouter,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import type { UniversalHandlerOptions } from "@connectrpc/connect/protocol";
import { authorize, type Authenticator } from "./access.js";
import { clientAddressKey, requestLogKey } from "./context.js";
import { requestInfo } from "./request-info.js";
import type { RestExchange } from "./rest.js";

/** A typed service and its implementation, as a part hands it to the server. */
export interface ServiceBinding {
  readonly service: DescService;
  /** Adds the service to Connect's router (Connect, gRPC, gRPC-Web). */
  register(router: ConnectRouter): void;
  readonly methods: readonly MethodImplSpec[];
}

/** `options`: Connect's own, for this service alone (e.g. no compression). */
export function bindService<S extends DescService>(service: S, impl: ServiceImpl<S>, options?: Partial<UniversalHandlerOptions>): ServiceBinding {
  return {
    service,
    register: (router) => router.service(service, impl, options),
    methods: Object.values(createServiceImplSpec(service, impl).methods),
  };
}

/** A unary RPC called from a REST route: its answer and the headers the service set. */
export interface RestCallResult<O extends DescMessage> {
  message: MessageShape<O>;
  responseHeader: Headers;
}

/**
 * How a REST route calls an RPC. The route reads what it must from the HTTP
 * request and says how to decode it into the RPC's message; the pipeline
 * authorizes first, then decodes, then runs the same interceptors and the
 * same service function as Connect, gRPC and gRPC-Web, with the same
 * shutdown signal in the handler context.
 */
export interface RestRpc {
  call<I extends DescMessage, O extends DescMessage>(
    exchange: RestExchange,
    method: DescMethodUnary<I, O>,
    decode: () => MessageShape<I>,
  ): Promise<RestCallResult<O>>;
}

export interface RpcPipelineOptions {
  bindings: readonly ServiceBinding[];
  authenticator: Authenticator;
  /** The interceptors Connect's router runs, in the same order. */
  interceptors: readonly Interceptor[];
  shutdownSignal: AbortSignal;
}

/**
 * REST's way into the services. Why not through Connect's router, as a
 * Connect JSON request: Connect decodes a unary body before any interceptor
 * runs, and our REST contract decodes after authorization (a caller without
 * credentials learns nothing about its body), keeps its own body rules, and
 * the extra encode/decode would sit on every REST call. So the pipeline runs
 * the registered implementation itself, behind the router's interceptors.
 */
export function createRestRpc(options: RpcPipelineOptions): RestRpc {
  const unary = new Map<DescMethod, MethodImplSpec>();
  for (const binding of options.bindings) for (const spec of binding.methods) if (spec.kind === "unary") unary.set(spec.method, spec);

  return {
    async call<I extends DescMessage, O extends DescMessage>(
      exchange: RestExchange,
      method: DescMethodUnary<I, O>,
      decode: () => MessageShape<I>,
    ): Promise<RestCallResult<O>> {
      const spec = unary.get(method);
      if (spec?.kind !== "unary") throw new Error(`no unary implementation for ${method.parent.typeName}.${method.name}`);
      const { req, url } = exchange;
      const info = requestInfo(req);
      const clientAddress = info?.clientAddress ?? "";
      const context = createHandlerContext({
        service: method.parent,
        method,
        protocolName: "rest",
        requestMethod: req.method ?? "GET",
        url: url.href,
        requestHeader: headerEntries(req.headers),
        requestSignal: info?.hangUpSignal ?? NEVER_ABORTED,
        shutdownSignal: options.shutdownSignal,
        contextValues: createContextValues().set(clientAddressKey, clientAddress).set(requestLogKey, info),
      });
      try {
        await authorize(options.authenticator, context, clientAddress);
        const request: UnaryRequest<I, O> = {
          stream: false,
          service: method.parent,
          method,
          requestMethod: context.requestMethod,
          url: context.url,
          signal: context.signal,
          header: context.requestHeader,
          contextValues: context.values,
          message: decode(),
        };
        // The service function runs in the context made above, behind the same interceptors as Connect's.
        const invoke = async (intercepted: UnaryRequest): Promise<UnaryResponse> => {
          const message = create(method.output, (await spec.impl(intercepted.message, context)) as MessageInitShape<O>);
          return { stream: false, service: method.parent, method, header: context.responseHeader, trailer: context.responseTrailer, message };
        };
        const handle = options.interceptors.reduceRight<(request: UnaryRequest) => Promise<UnaryResponse>>(
          (next, interceptor) => interceptor(next as Parameters<Interceptor>[0]) as (request: UnaryRequest) => Promise<UnaryResponse>,
          invoke,
        );
        const response = await handle(request as UnaryRequest);
        return { message: response.message as MessageShape<O>, responseHeader: response.header };
      } finally {
        // As Connect's handlers do when a call ends: the context lets go of the shutdown signal it listens to.
        // With a reason made once: without one, every call built an AbortError DOMException (3% of a create's CPU).
        context.abort(CALL_ENDED);
      }
    },
  };
}

const NEVER_ABORTED = new AbortController().signal;
const CALL_ENDED = new Error("the call has ended");

/** Node's request headers as Fetch header entries. */
function headerEntries(headers: NodeJS.Dict<string | string[]>): [string, string][] {
  const entries: [string, string][] = [];
  for (const name in headers) {
    const value = headers[name];
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) entries.push([name, v]);
    else entries.push([name, value]);
  }
  return entries;
}
