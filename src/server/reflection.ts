import { create, toBinary, type DescExtension, type DescFile, type DescMessage, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { file_zero_v1_error } from "../../gen/zero/v1/error_pb.js";

/**
 * gRPC server reflection (v1 and v1alpha), so `buf curl` and grpcurl can list
 * and call our services without the proto files. Answers from the descriptors
 * embedded in the generated code.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  // Listed as grpc-go's reflection lists them: the services, health, and reflection itself.
  const index = new DescriptorIndex([...services, Health, v1.ServerReflection], [file_zero_v1_error]);
  router.service(v1.ServerReflection, {
    serverReflectionInfo: (requests) => answer(index, requests),
  });
  router.service(v1alpha.ServerReflection, {
    // The two versions have the same messages under different package names.
    serverReflectionInfo: (requests) => answer(index, requests) as AsyncIterable<MessageInitShape<typeof v1alpha.ServerReflectionResponseSchema>>,
  });
}

type ReflectionRequest = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

async function* answer(
  index: DescriptorIndex,
  requests: AsyncIterable<ReflectionRequest>,
): AsyncIterable<MessageInitShape<typeof v1.ServerReflectionResponseSchema>> {
  for await (const request of requests) {
    yield { validHost: request.host, originalRequest: request as v1.ServerReflectionRequest, messageResponse: index.respond(request) };
  }
}

class DescriptorIndex {
  readonly #files = new Map<string, DescFile>();
  readonly #symbols = new Map<string, DescFile>();
  readonly #extensions = new Map<string, DescExtension[]>();
  readonly #serviceNames: string[];

  /** `files`: more to describe beside the services' own, such as the error detail every RPC error carries, which none of them imports. */
  constructor(services: readonly DescService[], files: readonly DescFile[] = []) {
    this.#serviceNames = services.map((s) => s.typeName);
    for (const service of services) this.#addFile(service.file);
    for (const file of files) this.#addFile(file);
  }

  #addFile(file: DescFile): void {
    if (this.#files.has(file.proto.name)) return;
    this.#files.set(file.proto.name, file);
    const addMessage = (message: DescMessage) => {
      this.#symbols.set(message.typeName, file);
      for (const nested of message.nestedMessages) addMessage(nested);
      for (const e of message.nestedEnums) this.#symbols.set(e.typeName, file);
      for (const x of message.nestedExtensions) this.#addExtension(x, file);
    };
    for (const message of file.messages) addMessage(message);
    for (const e of file.enums) this.#symbols.set(e.typeName, file);
    for (const x of file.extensions) this.#addExtension(x, file);
    for (const service of file.services) {
      this.#symbols.set(service.typeName, file);
      for (const m of service.methods) this.#symbols.set(`${service.typeName}.${m.name}`, file);
    }
    for (const dep of file.dependencies) this.#addFile(dep);
  }

  #addExtension(extension: DescExtension, file: DescFile): void {
    this.#symbols.set(extension.typeName, file);
    const list = this.#extensions.get(extension.extendee.typeName) ?? [];
    list.push(extension);
    this.#extensions.set(extension.extendee.typeName, list);
  }

  respond(request: ReflectionRequest): MessageInitShape<typeof v1.ServerReflectionResponseSchema>["messageResponse"] {
    const { messageRequest } = request;
    switch (messageRequest.case) {
      case "listServices":
        return {
          case: "listServicesResponse",
          value: { service: this.#serviceNames.map((name) => ({ name })) },
        };
      case "fileByFilename":
        return this.#fileResponse(this.#files.get(messageRequest.value), `file "${messageRequest.value}"`);
      case "fileContainingSymbol":
        return this.#fileResponse(this.#symbols.get(messageRequest.value), `symbol "${messageRequest.value}"`);
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = messageRequest.value;
        const extension = this.#extensions.get(containingType)?.find((x) => x.number === extensionNumber);
        return this.#fileResponse(extension?.file, `extension ${extensionNumber} of "${containingType}"`);
      }
      case "allExtensionNumbersOfType": {
        const extensions = this.#extensions.get(messageRequest.value);
        if (!extensions) return notFound(`type "${messageRequest.value}"`);
        return {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: messageRequest.value, extensionNumber: extensions.map((x) => x.number) },
        };
      }
      default:
        return { case: "errorResponse", value: { errorCode: 3 /* INVALID_ARGUMENT */, errorMessage: "empty request" } };
    }
  }

  #fileResponse(file: DescFile | undefined, what: string) {
    if (!file) return notFound(what);
    // The file and everything it imports, so a client can resolve it in one round trip.
    const closure: DescFile[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      closure.push(f);
      f.dependencies.forEach(visit);
    };
    visit(file);
    return {
      case: "fileDescriptorResponse" as const,
      value: { fileDescriptorProto: closure.map((f) => toBinary(FileDescriptorProtoSchema, create(FileDescriptorProtoSchema, f.proto))) },
    };
  }
}

function notFound(what: string) {
  return { case: "errorResponse" as const, value: { errorCode: 5 /* NOT_FOUND */, errorMessage: `${what} not found` } };
}
