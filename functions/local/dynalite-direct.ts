/**
 * dynalite's DynamoDB operations for clients in this process, without its HTTP layer: the request's
 * input handed over as the object its JSON body parses to, checked by dynalite's own type checks and
 * validations, run by its own actions on its store, the answer handed back as the object its JSON
 * reply parses to. What the HTTP handler adds around those — reading and parsing the body, a random
 * request id, parsing the URL and the Authorization header, rendering and CRC-32 of the reply, and on
 * the client's side parsing it again — was about a third of a DynamoDB request's CPU in this process.
 *
 * dynalite exports no handle on its store, so `createDynalite` keeps the one its server is made with.
 */

import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import dynalite, { type DynaliteOptions } from 'dynalite';
import { type InProcessOperations, InProcessRefusal, wireForm } from '../aws/wire-http.ts';

/** dynalite's store (its db module's `create`): what its validations and actions are given. */
export type DynaliteStore = object & { readonly __dynaliteStore?: never };

interface Validation {
  readonly types: object;
  readonly custom?: unknown;
}
type Action = (
  store: DynaliteStore,
  data: Record<string, unknown>,
  cb: (error: unknown, output?: Record<string, unknown>) => void,
) => void;
interface Validations {
  checkTypes(data: Record<string, unknown>, types: object): Record<string, unknown>;
  checkValidations(data: Record<string, unknown>, types: object, custom: unknown, store: DynaliteStore): void;
}

const require = createRequire(import.meta.url);
const db = require('dynalite/db/index.js') as { create: (options: unknown) => DynaliteStore };
const validations = require('dynalite/validations/index.js') as Validations;

/** The operations dynalite serves (its `validOperations`); any other goes over HTTP, refused there. */
const OPERATIONS = [
  'BatchGetItem',
  'BatchWriteItem',
  'CreateTable',
  'DeleteItem',
  'DeleteTable',
  'DescribeTable',
  'DescribeTimeToLive',
  'GetItem',
  'ListTables',
  'PutItem',
  'Query',
  'Scan',
  'TagResource',
  'UntagResource',
  'ListTagsOfResource',
  'UpdateItem',
  'UpdateTable',
];

/** Each operation's validation and action modules, as dynalite's HTTP handler loads them. */
const handlers = new Map(
  OPERATIONS.map((operation) => {
    const name = operation[0]!.toLowerCase() + operation.slice(1);
    return [
      operation,
      {
        validation: require(`dynalite/validations/${name}.js`) as Validation,
        action: require(`dynalite/actions/${name}.js`) as Action,
      },
    ] as const;
  }),
);

/** A dynalite server, and the store it serves. */
export function createDynalite(options: DynaliteOptions): { server: Server; store: DynaliteStore } {
  const create = db.create;
  let store: DynaliteStore | undefined;
  db.create = (storeOptions) => {
    store = create(storeOptions);
    return store;
  };
  try {
    const server = dynalite(options);
    if (store === undefined) throw new Error("dynalite made its server without its db module's create");
    return { server, store };
  } finally {
    db.create = create;
  }
}

/** A refusal as dynalite's HTTP handler would send it (status and body); other errors as they are. */
function refusal(error: unknown): unknown {
  const { statusCode, body } = (error ?? {}) as { statusCode?: unknown; body?: unknown };
  return typeof statusCode === 'number' && body !== null && typeof body === 'object'
    ? new InProcessRefusal(statusCode, wireForm(body) as Record<string, unknown>)
    : error;
}

/**
 * The steps of dynalite's HTTP handler after it has parsed a valid, signed request's body: the type
 * checks, the validations (expressions parsed, values checked), the action; `input` is the parsed
 * body (wireForm), which the checks may consume. An operation dynalite does not serve: undefined.
 */
export function dynaliteOperations(store: DynaliteStore): InProcessOperations {
  return (operation, input) => {
    const handler = handlers.get(operation);
    if (handler === undefined) return undefined;
    return new Promise((resolve, reject) => {
      try {
        const { types, custom } = handler.validation;
        const data = validations.checkTypes(input, types);
        validations.checkValidations(data, types, custom, store);
        handler.action(store, data, (error, output) => {
          if (error) reject(refusal(error));
          // The reply as it parses: a fresh copy, without the members JSON leaves out.
          else resolve(wireForm(output ?? {}) as Record<string, unknown>);
        });
      } catch (error) {
        reject(refusal(error));
      }
    });
  };
}
