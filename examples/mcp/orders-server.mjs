/**
 * The order desk of examples/refund-approval.json: an MCP server over stdio, built with the official
 * SDK, offering one tool, `lookup_order`, over a fixed set of orders (the same answer every time, so
 * the example runs offline and reproducibly). Plain JavaScript, so it runs with `node` alone, from a
 * checkout or from the installed package:
 *
 *   node examples/mcp/orders-server.mjs
 *
 * With ORDERS_CALLS_FILE set (a workflow gives it in the handler's `env`), each call is appended to
 * that file as a line of JSON: how the tests count the calls the server saw.
 */
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

/** The orders the desk knows, by id. */
const ORDERS = {
  'A-17': { order: 'A-17', customer: 'Ada', status: 'paid', charges: [80, 80], currency: 'EUR' },
  'B-42': { order: 'B-42', customer: 'Grace', status: 'refunded', charges: [30], currency: 'EUR' },
};

const server = new McpServer({ name: 'stepthread-example-orders', version: '1.0.0' });
server.registerTool(
  'lookup_order',
  {
    description: 'Looks an order up: its customer, status and charges',
    inputSchema: { order: z.string().describe('The order id, e.g. A-17') },
  },
  async ({ order }) => {
    const calls = process.env.ORDERS_CALLS_FILE;
    if (calls) appendFileSync(calls, `${JSON.stringify({ tool: 'lookup_order', args: { order } })}\n`);
    const found = ORDERS[order];
    if (found === undefined) return { isError: true, content: [{ type: 'text', text: `no order ${order}` }] };
    return { content: [{ type: 'text', text: JSON.stringify(found) }], structuredContent: found };
  },
);
await server.connect(new StdioServerTransport());
