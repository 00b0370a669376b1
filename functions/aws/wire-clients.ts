/**
 * The embedded target's DynamoDB and S3 clients: the SDK's command objects, sent to dynalite and
 * s3rver over the real wire protocols (wire-http.ts) by a thin client instead of the SDK's.
 *
 * Why not the SDK: against an emulator on loopback it was four fifths of a request's cost. A
 * GetItem through the document client took 1.6 ms; the same request as a plain HTTP POST, dynalite's
 * work included, 0.4 ms. Its per-request work (endpoint rules, SigV4 with a SHA-256 of the body,
 * retry quotas, schema-driven serde over copies of the whole client config) serves AWS, not a local
 * process; with four requests per step it was most of a node's time on the embedded runtime.
 *
 * What stays the same: the stores send the same commands (lib-dynamodb's GetCommand, …; S3's
 * PutObjectCommand, …), attribute values are marshalled by @aws-sdk/util-dynamodb with the
 * document client's options and by the members lib-dynamodb names for each command, and failures
 * are errors named as the SDK names them (`ConditionalCheckFailedException`, `NoSuchKey`, …) with
 * `$metadata.httpStatusCode`. `test/functions/wire-clients.test.ts` sends the same commands through
 * both clients and compares the answers. AWS and LocalStack keep the SDK (dynamo-client.ts,
 * s3-client.ts). Commands the stores never send are refused by name.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ListTablesCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactGetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { convertToAttr, convertToNative } from '@aws-sdk/util-dynamodb';
import { DOCUMENT_TRANSLATION } from './dynamo-client.ts';
import { once } from './once.ts';
import { dynamoOperation, loopbackAgent, s3Path, s3Request, wireJson } from './wire-http.ts';

/** One call as interceptors see it: the low-level command's name, its input as given, its body's bytes. */
export interface WireCall {
  /** As the SDK names it in a middleware context: `GetItemCommand`, `PutObjectCommand`, … */
  readonly commandName: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** The request body's bytes: the JSON sent (DynamoDB), the object (S3 PutObject), else 0. */
  readonly bodyBytes: number;
}

/** Wraps every call (a meter, a test's counter); `next` sends it. */
export type WireInterceptor = (call: WireCall, next: () => Promise<unknown>) => Promise<unknown>;

interface WireClient {
  /** Adds an interceptor; the first added is the outermost. */
  intercept(interceptor: WireInterceptor): void;
  destroy(): void;
}

/** The document client's `send` and `destroy`, over the wire: all the stores use. */
export type WireDocumentClient = Pick<DynamoDBDocumentClient, 'send' | 'destroy'> & WireClient;
export type WireS3Client = Pick<S3Client, 'send' | 'destroy'> & WireClient;

export function isWireClient(client: object): client is WireClient {
  return typeof (client as Partial<WireClient>).intercept === 'function';
}

/** The document client's options (dynamo-client.ts), with the defaults lib-dynamodb adds to them. */
const MARSHALL_OPTIONS = { ...DOCUMENT_TRANSLATION.marshallOptions, convertTopLevelContainer: true };
const UNMARSHALL_OPTIONS = { ...DOCUMENT_TRANSLATION.unmarshallOptions, convertWithoutMapWrapper: true };

/**
 * Which members of an input or output hold attribute values, as lib-dynamodb describes them on each
 * command: `null` the value itself, an empty object or array every member, `{"*": nodes}` every
 * entry by `nodes`, other keys the members they name.
 */
type KeyNodes = null | readonly unknown[] | { readonly [member: string]: KeyNodes };

interface DocumentCommandShape {
  readonly input: Record<string, unknown>;
  readonly inputKeyNodes: Readonly<Record<string, KeyNodes>>;
  readonly outputKeyNodes: Readonly<Record<string, KeyNodes>>;
}

function convertMembers(value: unknown, nodes: KeyNodes, convert: (value: unknown) => unknown): unknown {
  if (value === undefined || value === null || typeof value !== 'object') {
    return nodes === null && value !== undefined ? convert(value) : value;
  }
  if (nodes === null) return convert(value);
  const keys = Object.keys(nodes);
  const source = value as Record<string, unknown>;
  if (keys.length === 0 || (keys.length === 1 && keys[0] === '*')) {
    const inner = keys.length === 0 ? null : (nodes as Record<string, KeyNodes>)['*']!;
    if (Array.isArray(value)) return value.map((entry) => convertMembers(entry, inner, convert));
    const converted: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(source)) {
      if (entry !== undefined) converted[key] = convertMembers(entry, inner, convert);
    }
    return converted;
  }
  return convertNamed(source, nodes as Record<string, KeyNodes>, convert);
}

/** `value` with the members `nodes` names converted, the others as they are (a command's input or output). */
function convertNamed(
  value: Record<string, unknown>,
  nodes: Readonly<Record<string, KeyNodes>>,
  convert: (value: unknown) => unknown,
): Record<string, unknown> {
  const converted: Record<string, unknown> = { ...value };
  for (const [key, inner] of Object.entries(nodes)) {
    const member = convertMembers(value[key], inner, convert);
    if (member !== undefined) converted[key] = member;
  }
  return converted;
}

const marshallValue = (value: unknown) => convertToAttr(value, MARSHALL_OPTIONS);
const unmarshallValue = (value: unknown) =>
  convertToNative(value as Parameters<typeof convertToNative>[0], UNMARSHALL_OPTIONS);

/** The DynamoDB operation each document command is. */
const DOCUMENT_OPERATIONS = new Map<unknown, string>([
  [GetCommand, 'GetItem'],
  [PutCommand, 'PutItem'],
  [UpdateCommand, 'UpdateItem'],
  [DeleteCommand, 'DeleteItem'],
  [QueryCommand, 'Query'],
  [ScanCommand, 'Scan'],
  [BatchGetCommand, 'BatchGetItem'],
  [BatchWriteCommand, 'BatchWriteItem'],
  [TransactGetCommand, 'TransactGetItems'],
  [TransactWriteCommand, 'TransactWriteItems'],
]);

/** Table commands, sent as they are (their inputs hold no attribute values): provisioning uses them. */
const TABLE_OPERATIONS = new Map<unknown, string>([
  [CreateTableCommand, 'CreateTable'],
  [DescribeTableCommand, 'DescribeTable'],
  [ListTablesCommand, 'ListTables'],
  [UpdateTimeToLiveCommand, 'UpdateTimeToLive'],
  [DescribeTimeToLiveCommand, 'DescribeTimeToLive'],
]);

function unsupported(command: unknown, client: string): Error {
  const name = (command as { constructor?: { name?: string } } | undefined)?.constructor?.name ?? 'a command';
  return new Error(
    `${name} is not sent by the embedded ${client} client (functions/aws/wire-clients.ts); use an SDK client`,
  );
}

/** Runs `send` through the interceptors, the first added outermost; with none, `send` alone. */
function intercepted(
  interceptors: readonly WireInterceptor[],
  call: () => WireCall,
  send: () => Promise<unknown>,
): Promise<unknown> {
  if (interceptors.length === 0) return send();
  const seen = call();
  let next = send;
  for (let i = interceptors.length - 1; i >= 0; i -= 1) {
    const interceptor = interceptors[i]!;
    const inner = next;
    next = () => interceptor(seen, inner);
  }
  return next();
}

export function createWireDocumentClient(endpoint: string): WireDocumentClient {
  // Parsed on first use: a command may make clients for a target it then never sends to.
  let parsed: URL | undefined;
  const url = () => (parsed ??= new URL(endpoint));
  const agent = loopbackAgent();
  const interceptors: WireInterceptor[] = [];
  const perform = async (
    operation: string,
    document: boolean,
    wire: Record<string, unknown>,
    outputKeyNodes: DocumentCommandShape['outputKeyNodes'],
  ) => {
    let output: Record<string, unknown>;
    try {
      output = await dynamoOperation(url(), agent, operation, wire);
    } catch (error) {
      // A failed condition can carry the item (ReturnValuesOnConditionCheckFailure).
      const item = (error as { Item?: unknown }).Item;
      if (item !== undefined) Object.assign(error as object, { Item: unmarshallValue({ M: item }) });
      throw error;
    }
    const unmarshalled = document ? convertNamed(output, outputKeyNodes, unmarshallValue) : output;
    return { ...unmarshalled, $metadata: { httpStatusCode: 200 } };
  };
  const send = (command: unknown): Promise<unknown> => {
    const type = (command as object | undefined)?.constructor;
    const operation = DOCUMENT_OPERATIONS.get(type) ?? TABLE_OPERATIONS.get(type);
    if (operation === undefined) return Promise.reject(unsupported(command, 'DynamoDB'));
    const document = DOCUMENT_OPERATIONS.has(type);
    const { input, inputKeyNodes, outputKeyNodes } = command as DocumentCommandShape;
    let wire: Record<string, unknown>;
    try {
      wire = document ? convertNamed(input, inputKeyNodes, marshallValue) : input;
    } catch (error) {
      return Promise.reject(error);
    }
    // Sized only for interceptors (meters), before the emulator takes the request.
    const call = () => ({
      commandName: `${operation}Command`,
      input,
      bodyBytes: Buffer.byteLength(wireJson(wire)),
    });
    return intercepted(interceptors, call, () => perform(operation, document, wire, outputKeyNodes));
  };
  return {
    send: send as WireDocumentClient['send'],
    intercept: (interceptor) => void interceptors.push(interceptor),
    destroy: () => agent.destroy(),
  };
}

/** A GetObject body, as the SDK's stream mixin offers it: read once, whole. */
function objectBody(bytes: Buffer) {
  return {
    transformToString: async (encoding: BufferEncoding = 'utf-8') => bytes.toString(encoding),
    transformToByteArray: async () => new Uint8Array(bytes),
  };
}

/** A ListObjects answer's XML as the SDK parses it: the members the stores read. */
function listingOf(xml: string) {
  const text = (within: string, tag: string) => {
    const found = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(within)?.[1];
    return found === undefined ? undefined : unescapeXml(found);
  };
  const contents = [...xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)].map(([, entry]) => ({
    Key: text(entry!, 'Key'),
    LastModified: new Date(text(entry!, 'LastModified') ?? 0),
    Size: Number(text(entry!, 'Size') ?? 0),
    ETag: text(entry!, 'ETag'),
  }));
  return { Contents: contents, IsTruncated: text(xml, 'IsTruncated') === 'true' };
}

function unescapeXml(text: string): string {
  return text
    .replaceAll('&quot;', '"')
    .replaceAll('&apos;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

/** S3 inputs' members each command honours; any other member is refused rather than ignored. */
const S3_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  PutObject: ['Bucket', 'Key', 'Body', 'ContentType'],
  GetObject: ['Bucket', 'Key', 'Range'],
  HeadObject: ['Bucket', 'Key'],
  DeleteObject: ['Bucket', 'Key'],
  ListObjects: ['Bucket', 'Prefix', 'Marker', 'MaxKeys'],
  HeadBucket: ['Bucket'],
  CreateBucket: ['Bucket'],
};

export function createWireS3Client(endpoint: string): WireS3Client {
  // Parsed on first use: a command may make clients for a target it then never sends to.
  let parsed: URL | undefined;
  const url = () => (parsed ??= new URL(endpoint));
  const agent = loopbackAgent();
  const interceptors: WireInterceptor[] = [];
  // The stores import @aws-sdk/client-s3 on first use (they build its commands); so does this.
  const operations = once(async () => {
    const s3 = await import('@aws-sdk/client-s3');
    return new Map<unknown, string>([
      [s3.PutObjectCommand, 'PutObject'],
      [s3.GetObjectCommand, 'GetObject'],
      [s3.HeadObjectCommand, 'HeadObject'],
      [s3.DeleteObjectCommand, 'DeleteObject'],
      [s3.ListObjectsCommand, 'ListObjects'],
      [s3.HeadBucketCommand, 'HeadBucket'],
      [s3.CreateBucketCommand, 'CreateBucket'],
    ]);
  });

  const perform = async (operation: string, input: Record<string, unknown>, body?: string | Uint8Array) => {
    const bucket = String(input.Bucket);
    const key = input.Key === undefined ? undefined : String(input.Key);
    const path = s3Path(bucket, key);
    switch (operation) {
      case 'PutObject': {
        const headers: Record<string, string | number> = { 'Content-Length': Buffer.byteLength(body ?? '') };
        if (typeof input.ContentType === 'string') headers['Content-Type'] = input.ContentType;
        const reply = await s3Request(url(), agent, { method: 'PUT', path, headers, body: body ?? '' });
        return { ETag: reply.headers.etag };
      }
      case 'GetObject': {
        // A range read (`bytes=<first>-<last>`): an item of a FORK over a list reads its part of the source.
        const headers: Record<string, string> = typeof input.Range === 'string' ? { Range: input.Range } : {};
        const reply = await s3Request(url(), agent, { method: 'GET', path, headers });
        return {
          Body: objectBody(reply.body),
          ContentLength: reply.body.byteLength,
          ContentType: reply.headers['content-type'],
          ETag: reply.headers.etag,
        };
      }
      case 'HeadObject': {
        const reply = await s3Request(url(), agent, { method: 'HEAD', path, headers: {} });
        return {
          ContentLength: Number(reply.headers['content-length'] ?? 0),
          ContentType: reply.headers['content-type'],
          ETag: reply.headers.etag,
        };
      }
      case 'DeleteObject':
        await s3Request(url(), agent, { method: 'DELETE', path, headers: {} });
        return {};
      case 'ListObjects': {
        // Version 1, paged by `Marker`: s3rver's version 2 fails on every truncated page (its
        // continuation token is DES-encrypted, a cipher Node 22's OpenSSL no longer offers).
        const query = new URLSearchParams();
        if (typeof input.Prefix === 'string') query.set('prefix', input.Prefix);
        if (typeof input.Marker === 'string') query.set('marker', input.Marker);
        if (typeof input.MaxKeys === 'number') query.set('max-keys', String(input.MaxKeys));
        const reply = await s3Request(url(), agent, { method: 'GET', path: `${path}?${query}`, headers: {} });
        return listingOf(reply.body.toString('utf8'));
      }
      case 'HeadBucket':
        await s3Request(url(), agent, { method: 'HEAD', path, headers: {} });
        return {};
      default:
        await s3Request(url(), agent, { method: 'PUT', path, headers: { 'Content-Length': 0 } });
        return {};
    }
  };

  const send = async (command: unknown): Promise<unknown> => {
    const operation = (await operations()).get((command as object | undefined)?.constructor);
    if (operation === undefined) throw unsupported(command, 'S3');
    const input = (command as { input: Record<string, unknown> }).input;
    const extra = Object.keys(input).filter(
      (member) => input[member] !== undefined && !S3_MEMBERS[operation]!.includes(member),
    );
    if (extra.length > 0)
      throw new Error(`${operation}: ${extra.join(', ')} not supported by the embedded S3 client`);
    const body = operation === 'PutObject' ? objectBytes(input.Body) : undefined;
    const call = () => ({
      commandName: `${operation}Command`,
      input,
      bodyBytes: body === undefined ? 0 : Buffer.byteLength(body),
    });
    return intercepted(interceptors, call, async () => ({
      ...(await perform(operation, input, body)),
      $metadata: { httpStatusCode: 200 },
    }));
  };
  return {
    send: send as WireS3Client['send'],
    intercept: (interceptor) => void interceptors.push(interceptor),
    destroy: () => agent.destroy(),
  };
}

function objectBytes(body: unknown): string | Uint8Array {
  if (body === undefined) return '';
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new Error('PutObject: the embedded S3 client sends strings and byte arrays only');
}
