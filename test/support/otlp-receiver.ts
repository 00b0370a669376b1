/**
 * A local OTLP/HTTP trace receiver (what a collector's `otlp` receiver does on :4318): a plain Node
 * http server on loopback taking `POST /v1/traces` as JSON (`http/json`) or protobuf
 * (`http/protobuf`, read with a small wire-format reader of the few fields tests look at), answering
 * 200 with an empty export response. Spans are kept flattened, their attributes as plain values.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly statusMessage: string;
  readonly resource: Readonly<Record<string, unknown>>;
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The raw request bodies, as text (JSON) or latin1 (protobuf): what a leak scan reads. */
  readonly bodies: string[];
  /** Content types of the requests received. */
  readonly contentTypes: string[];
  close(): Promise<void>;
}

function bodyOf(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer(async (request, response) => {
    const body = await bodyOf(request);
    const type = String(request.headers['content-type'] ?? '');
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    contentTypes.push(type);
    try {
      if (type.includes('json')) {
        bodies.push(body.toString('utf8'));
        spans.push(...spansOfJson(JSON.parse(body.toString('utf8'))));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        bodies.push(body.toString('latin1'));
        spans.push(...spansOfProtobuf(body));
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    } catch (error) {
      response.writeHead(400).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    contentTypes,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// ---- JSON (OTLP/HTTP JSON encoding: ids as hex strings) ----

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
}

function jsonValue(value: JsonValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

function jsonAttributes(list: { key: string; value?: JsonValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, jsonValue(value)]));
}

// biome-ignore lint/suspicious/noExplicitAny: the OTLP JSON document, read field by field.
function spansOfJson(document: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of document.resourceSpans ?? []) {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          attributes: jsonAttributes(span.attributes),
          statusCode: span.status?.code ?? 0,
          statusMessage: span.status?.message ?? '',
          resource,
        });
      }
    }
  }
  return out;
}

// ---- protobuf (opentelemetry/proto/collector/trace/v1 ExportTraceServiceRequest) ----

type Field = { number: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer };

/** The fields of one protobuf message, in order. */
function fields(buffer: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const number = key >>> 3;
    switch (key & 7) {
      case 0:
        out.push({ number, varint: varint() });
        break;
      case 1:
        out.push({ number, fixed: buffer.subarray(at, at + 8) });
        at += 8;
        break;
      case 2: {
        const length = Number(varint());
        out.push({ number, bytes: buffer.subarray(at, at + length) });
        at += length;
        break;
      }
      case 5:
        out.push({ number, fixed: buffer.subarray(at, at + 4) });
        at += 4;
        break;
      default:
        throw new Error(`unsupported protobuf wire type ${key & 7}`);
    }
  }
  return out;
}

const all = (list: Field[], number: number): Buffer[] =>
  list.filter((field) => field.number === number && field.bytes).map((field) => field.bytes!);
const first = (list: Field[], number: number): Field | undefined =>
  list.find((field) => field.number === number);

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array. */
function protobufValue(buffer: Buffer): unknown {
  const [field] = fields(buffer);
  if (field === undefined) return undefined;
  switch (field.number) {
    case 1:
      return field.bytes!.toString('utf8');
    case 2:
      return field.varint === 1n;
    case 3:
      return Number(BigInt.asIntN(64, field.varint!));
    case 4:
      return field.fixed!.readDoubleLE(0);
    case 5:
      return all(fields(field.bytes!), 1).map(protobufValue);
    default:
      return undefined;
  }
}

/** KeyValue: 1 key, 2 value. */
function protobufAttributes(list: Buffer[]): Record<string, unknown> {
  return Object.fromEntries(
    list.map((buffer) => {
      const kv = fields(buffer);
      const value = first(kv, 2)?.bytes;
      return [first(kv, 1)?.bytes?.toString('utf8') ?? '', value ? protobufValue(value) : undefined];
    }),
  );
}

function spansOfProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  // ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.resource = 1, scope_spans = 2;
  // Resource.attributes = 1; ScopeSpans.spans = 2.
  for (const resourceSpans of all(fields(body), 1).map(fields)) {
    const resourceBytes = first(resourceSpans, 1)?.bytes;
    const resource = resourceBytes ? protobufAttributes(all(fields(resourceBytes), 1)) : {};
    for (const scopeSpans of all(resourceSpans, 2).map(fields)) {
      for (const span of all(scopeSpans, 2).map(fields)) {
        // Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 9 attributes, 15 status (2 message, 3 code).
        const status = first(span, 15)?.bytes;
        const statusFields = status ? fields(status) : [];
        out.push({
          traceId: first(span, 1)?.bytes?.toString('hex') ?? '',
          spanId: first(span, 2)?.bytes?.toString('hex') ?? '',
          parentSpanId: first(span, 4)?.bytes?.toString('hex') ?? '',
          name: first(span, 5)?.bytes?.toString('utf8') ?? '',
          attributes: protobufAttributes(all(span, 9)),
          statusCode: Number(first(statusFields, 3)?.varint ?? 0n),
          statusMessage: first(statusFields, 2)?.bytes?.toString('utf8') ?? '',
          resource,
        });
      }
    }
  }
  return out;
}
