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
import dynalite, { type DynaliteOptions } from 'dynalite';
import batchGetItem from 'dynalite/actions/batchGetItem.js';
import batchWriteItem from 'dynalite/actions/batchWriteItem.js';
import deleteItem from 'dynalite/actions/deleteItem.js';
import getItem from 'dynalite/actions/getItem.js';
import putItem from 'dynalite/actions/putItem.js';
import query from 'dynalite/actions/query.js';
import scan from 'dynalite/actions/scan.js';
import updateItem from 'dynalite/actions/updateItem.js';
import db from 'dynalite/db/index.js';
import batchGetItemValidation from 'dynalite/validations/batchGetItem.js';
import batchWriteItemValidation from 'dynalite/validations/batchWriteItem.js';
import deleteItemValidation from 'dynalite/validations/deleteItem.js';
import getItemValidation from 'dynalite/validations/getItem.js';
import validations from 'dynalite/validations/index.js';
import putItemValidation from 'dynalite/validations/putItem.js';
import queryValidation from 'dynalite/validations/query.js';
import scanValidation from 'dynalite/validations/scan.js';
import updateItemValidation from 'dynalite/validations/updateItem.js';
import { type InProcessOperations, InProcessRefusal, wireForm } from '../aws/wire-http.ts';
import { checkRequestTypes } from './dynalite-types.ts';

/** dynalite's store (its db module's `create`): what its validations and actions are given. */
export type DynaliteStore = import('dynalite/db/index.js').DynaliteStore;

/**
 * The item operations the stores send, each with its validation and action modules as dynalite's HTTP
 * handler loads them (imported by name, so a bundle holds them). Any other operation — the table
 * operations provisioning sends now and then — goes to dynalite's HTTP handler, in process.
 */
const handlers = new Map([
  ['GetItem', { validation: getItemValidation, action: getItem }],
  ['PutItem', { validation: putItemValidation, action: putItem }],
  ['UpdateItem', { validation: updateItemValidation, action: updateItem }],
  ['DeleteItem', { validation: deleteItemValidation, action: deleteItem }],
  ['Query', { validation: queryValidation, action: query }],
  ['Scan', { validation: scanValidation, action: scan }],
  ['BatchGetItem', { validation: batchGetItemValidation, action: batchGetItem }],
  ['BatchWriteItem', { validation: batchWriteItemValidation, action: batchWriteItem }],
]);

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

/**
 * An action's output as its JSON reply parses, without the members it leaves undefined (a
 * ConsumedCapacity not asked for, or its Table). Its items are dynalite's fresh decodings of its
 * store, or built for this request and already encoded into the store, so the caller may keep them:
 * only the capacity, which dynalite builds with undefined members, is copied as JSON would.
 */
function replyOf(output: Record<string, unknown> | undefined): Record<string, unknown> {
  const reply: Record<string, unknown> = {};
  for (const key in output) {
    const member = key === 'ConsumedCapacity' ? wireForm(output[key]) : output[key];
    if (member !== undefined) reply[key] = member;
  }
  return reply;
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
 * checks (compiled: dynalite-types.ts, which also make the JSON form of the request as the client
 * marshalled it), the validations (expressions parsed, values checked), the action. An operation
 * dynalite does not serve: undefined.
 */
export function dynaliteOperations(store: DynaliteStore): InProcessOperations {
  return (operation, input) => {
    const handler = handlers.get(operation);
    if (handler === undefined) return undefined;
    return new Promise((resolve, reject) => {
      try {
        const { types, custom } = handler.validation;
        const data = checkRequestTypes(input, types);
        validations.checkValidations(data, types, custom, store);
        handler.action(store, data, (error, output) => {
          if (error) reject(refusal(error));
          else resolve(replyOf(output));
        });
      } catch (error) {
        reject(refusal(error));
      }
    });
  };
}
