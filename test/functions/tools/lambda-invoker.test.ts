import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLambdaInvoker } from '../../../functions/tools/index.ts';

// A stand-in for the Lambda Invoke API (POST /2015-03-31/functions/<name>/invocations).
let server: Server;
let endpoint: string;
const requests: Array<{ url: string; body: string }> = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      requests.push({ url: request.url ?? '', body });
      const args = JSON.parse(body) as { fail?: boolean };
      if (args.fail) {
        response.writeHead(200, { 'x-amz-function-error': 'Unhandled' });
        return void response.end(JSON.stringify({ errorType: 'TypeError', errorMessage: 'no customer' }));
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ got: args }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('createLambdaInvoker', () => {
  const invoke = () =>
    createLambdaInvoker({
      endpoint: endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });

  it('invokes the function with the arguments as payload and returns its JSON result', async () => {
    const signal = new AbortController().signal;
    expect(await invoke()({ functionName: 'crm-lookup', payload: { id: 'c-1' }, signal })).toEqual({
      got: { id: 'c-1' },
    });
    expect(requests.at(-1)).toEqual({
      url: '/2015-03-31/functions/crm-lookup/invocations',
      body: '{"id":"c-1"}',
    });
  });

  it('throws the function’s error message when it fails', async () => {
    const signal = new AbortController().signal;
    await expect(invoke()({ functionName: 'crm-lookup', payload: { fail: true }, signal })).rejects.toThrow(
      'TypeError: no customer',
    );
  });
});
