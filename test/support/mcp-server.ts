/**
 * An MCP server built with the SDK (McpServer + StreamableHTTPServerTransport, stateless: one server
 * per request) on 127.0.0.1 at /mcp, recording every HTTP request (method, headers) and every tool
 * call. /moved redirects to /mcp (307), /away to the same server by another origin.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
// @ts-expect-error: a plain JavaScript fixture (the stdio server runs it with node alone).
import { buildMcpServer } from '../functions/tools/fixtures/mcp-tools.mjs';

export interface McpTestServer {
  /** The endpoint, e.g. http://127.0.0.1:40123/mcp. */
  url: string;
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; rpc?: string }>;
  calls: Array<{ tool: string; args: unknown }>;
  /** JSON-RPC methods received, in order (initialize, tools/list, tools/call, ...). */
  methods(): string[];
  close(): Promise<void>;
}

export async function startMcpServer(): Promise<McpTestServer> {
  const requests: McpTestServer['requests'] = [];
  const calls: McpTestServer['calls'] = [];
  const http: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? undefined : JSON.parse(text);
    requests.push({
      method: request.method ?? '',
      path: request.url ?? '',
      headers: request.headers,
      ...(typeof body?.method === 'string' ? { rpc: body.method } : {}),
    });
    // Redirects: within the origin (/moved), and to another origin (/away: localhost, not 127.0.0.1).
    if (request.url === '/moved' || request.url === '/away') {
      const port = (http.address() as AddressInfo).port;
      const to = request.url === '/moved' ? '/mcp' : `http://localhost:${port}/mcp`;
      response.writeHead(307, { location: to }).end();
      return;
    }
    if (!request.url?.startsWith('/mcp')) {
      response.writeHead(404).end();
      return;
    }
    if (request.method !== 'POST') {
      // Stateless: no standalone stream to open, no session to end.
      response.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const server = buildMcpServer({
      seen: (call: { tool: string; args: unknown }) => calls.push(call),
      authorization: () => request.headers.authorization,
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    methods: () => requests.flatMap((r) => (r.rpc ? [r.rpc] : [])),
    async close() {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
