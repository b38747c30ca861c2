import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescMessage, type DescMethod, type MessageInitShape, type MessageShape, create } from "@bufbuild/protobuf";

/**
 * A stock @grpc/grpc-js client for any of our methods, with no code
 * generation: messages are encoded with the generated protobuf-es schemas.
 */
export function grpcJsClient(url: string): grpc.Client {
  return new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
}

function path(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

export function grpcJsUnary<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethod & { input: I; output: O },
  request: MessageInitShape<I>,
  metadata: grpc.Metadata = new grpc.Metadata(),
): Promise<MessageShape<O>> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      path(method),
      (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      create(method.input, request),
      metadata,
      (error, response) => (error ? reject(error) : resolve(response as MessageShape<O>)),
    );
  });
}

export function grpcJsServerStream<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethod & { input: I; output: O },
  request: MessageInitShape<I>,
  metadata: grpc.Metadata = new grpc.Metadata(),
): grpc.ClientReadableStream<MessageShape<O>> {
  return client.makeServerStreamRequest(
    path(method),
    (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
    (bytes: Buffer) => fromBinary(method.output, bytes),
    create(method.input, request),
    metadata,
  );
}

export function grpcJsBidi<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethod & { input: I; output: O },
): grpc.ClientDuplexStream<MessageShape<I>, MessageShape<O>> {
  return client.makeBidiStreamRequest(
    path(method),
    (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
    (bytes: Buffer) => fromBinary(method.output, bytes),
  );
}
