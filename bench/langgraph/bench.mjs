#!/usr/bin/env node
// Side-by-side bench: how many bytes LangGraph.js writes to its SQLite checkpointer per step.
//
// Two workloads, each on one thread in a fresh SQLite file (SqliteSaver) in a temp dir:
//   chat  START -> llm -> llm -> ... -> END: one node looping T times inside ONE invoke
//         (a conditional edge sends llm back to itself until T turns are done).
//   chain START -> n1 -> n2 -> ... -> nT -> END: T distinct nodes, one invoke.
// Every step (one node execution) appends one ~1 KB user message and one ~1 KB assistant reply to
// `messages` (MessagesAnnotation, i.e. the messagesStateReducer), so a run holds 2 KB * T of message text.
// The "model" is a deterministic function: no network, no tokens, same text every run.
//
// Bytes written = sum(length(checkpoint) + length(metadata)) over `checkpoints`
//               + sum(length(value)) over `writes`
// (the two tables SqliteSaver.setup() creates; blobs are the serializer's JSON bytes).
//
// Usage: node bench.mjs [--t 10,50,100] [--workload chat,chain] [--json]
//                       [--durability async|sync|exit] [--delta]
//   --durability  LangGraph's checkpoint durability mode (default: LangGraph's default, "async",
//                 which still writes a checkpoint at every step, off the critical path).
//   --delta       use the experimental MessagesDeltaValue (DeltaChannel) instead of MessagesAnnotation.

import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import {
  END,
  MessagesAnnotation,
  MessagesDeltaValue,
  START,
  StateGraph,
  StateSchema,
} from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

const { values: opts } = parseArgs({
  options: {
    t: { type: 'string', default: '10,50,100,200,500,1000' },
    workload: { type: 'string', default: 'chat,chain' },
    json: { type: 'boolean', default: false },
    durability: { type: 'string' },
    delta: { type: 'boolean', default: false },
  },
});
const turnCounts = opts.t.split(',').map((s) => Number.parseInt(s, 10));
const workloads = opts.workload.split(',');
if (turnCounts.some((t) => !(t > 0)) || workloads.some((w) => w !== 'chat' && w !== 'chain')) {
  console.error(
    'usage: node bench.mjs [--t 10,50] [--workload chat,chain] [--json] [--durability M] [--delta]',
  );
  process.exit(2);
}

// ---- deterministic fake model -------------------------------------------------------------------------

const MESSAGE_CHARS = 1024; // ASCII only, so characters == bytes
const FILLER = 'The quick brown fox jumps over the lazy dog. '.repeat(Math.ceil(MESSAGE_CHARS / 45));
/** A fixed-length ASCII text that still differs per turn (like real prompts and replies do). */
const text = (head) => (head + FILLER).slice(0, MESSAGE_CHARS);
const userMessage = (turn) => new HumanMessage(text(`User prompt for turn ${turn}: `));
const modelReply = (turn) => new AIMessage(text(`Assistant reply to turn ${turn}: `));
/** One step: the user's prompt and the "model's" fixed reply, appended by the messages reducer. */
const turnUpdate = (turn) => ({ messages: [userMessage(turn), modelReply(turn)] });

const State = opts.delta ? new StateSchema({ messages: MessagesDeltaValue }) : MessagesAnnotation;

// ---- the two graphs -----------------------------------------------------------------------------------

/** START -> llm, then llm loops back to itself until it has answered T turns, then END. */
function chatLoop(T) {
  return new StateGraph(State)
    .addNode('llm', (state) => turnUpdate(state.messages.length / 2 + 1))
    .addEdge(START, 'llm')
    .addConditionalEdges('llm', (state) => (state.messages.length / 2 < T ? 'llm' : END), ['llm', END]);
}

/** START -> n1 -> n2 -> ... -> nT -> END, every node a distinct function doing one turn. */
function chain(T) {
  const graph = new StateGraph(State);
  for (let i = 1; i <= T; i++) graph.addNode(`n${i}`, () => turnUpdate(i));
  graph.addEdge(START, 'n1');
  for (let i = 1; i < T; i++) graph.addEdge(`n${i}`, `n${i + 1}`);
  graph.addEdge(`n${T}`, END);
  return graph;
}

// ---- one measured run ---------------------------------------------------------------------------------

async function run(workload, T) {
  const dir = mkdtempSync(join(tmpdir(), 'langgraph-bench-'));
  const file = join(dir, 'checkpoints.sqlite');
  try {
    const saver = SqliteSaver.fromConnString(file);
    const app = (workload === 'chat' ? chatLoop(T) : chain(T)).compile({ checkpointer: saver });
    const config = { configurable: { thread_id: 'bench' }, recursionLimit: T + 10 };
    if (opts.durability) config.durability = opts.durability;

    // invoke() resolves only after every pending checkpoint write has been stored, in every mode.
    const start = performance.now();
    const out = await app.invoke({ messages: [] }, config);
    const ms = performance.now() - start;

    if (out.messages.length !== 2 * T) throw new Error(`${workload} T=${T}: ${out.messages.length} messages`);
    const rawBytes = out.messages.reduce((sum, m) => sum + Buffer.byteLength(m.content), 0);

    const { db } = saver; // the checkpointer's own better-sqlite3 connection
    const cp = db
      .prepare(
        'SELECT count(*) AS rows, total(length(checkpoint) + length(metadata)) AS bytes FROM checkpoints',
      )
      .get();
    const wr = db.prepare('SELECT count(*) AS rows, total(length(value)) AS bytes FROM writes').get();
    db.pragma('wal_checkpoint(TRUNCATE)'); // fold the WAL into the main file before measuring it
    db.close();

    const bytesWritten = cp.bytes + wr.bytes;
    return {
      workload,
      T,
      steps: T,
      bytesWritten,
      checkpointBytes: cp.bytes,
      writeBytes: wr.bytes,
      dbFileBytes: statSync(file).size,
      checkpoints: cp.rows,
      writeRows: wr.rows,
      rawMessageBytes: rawBytes,
      writtenPerRaw: bytesWritten / rawBytes,
      bytesPerStep: bytesWritten / T,
      totalMs: ms,
      msPerStep: ms / T,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- output -------------------------------------------------------------------------------------------

// Warm-up (not reported): load modules and JIT the hot paths so the first measured run isn't penalised.
for (const workload of workloads) await run(workload, 5);

const results = [];
for (const workload of workloads) {
  for (const T of turnCounts) {
    const r = await run(workload, T);
    console.error(`${workload} T=${T}: ${mb(r.bytesWritten)} written, ${r.totalMs.toFixed(0)} ms`);
    results.push(r);
  }
}

function mb(bytes) {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} KB`;
}

if (opts.json) {
  console.log(JSON.stringify({ ...meta(), results }, null, 2));
} else {
  const m = meta();
  console.log(
    `@langchain/langgraph ${m.langgraph}, @langchain/langgraph-checkpoint-sqlite ${m.checkpointSqlite}, ` +
      `@langchain/core ${m.core}, better-sqlite3 ${m.betterSqlite3}, Node ${m.node}; ` +
      `state: ${m.state}; durability: ${m.durability}\n`,
  );
  console.log(
    '| workload | T | bytes written | per step | DB file | checkpoints | raw message bytes | written / raw | total ms | ms / step |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const cells = [
      r.workload,
      r.T,
      mb(r.bytesWritten),
      mb(r.bytesPerStep),
      mb(r.dbFileBytes),
      r.checkpoints,
      mb(r.rawMessageBytes),
      `${r.writtenPerRaw.toFixed(1)}x`,
      r.totalMs.toFixed(0),
      r.msPerStep.toFixed(2),
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

function meta() {
  // package.json is not in these packages' "exports", so read it from node_modules directly.
  const version = (pkg) =>
    JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;
  return {
    langgraph: version('@langchain/langgraph'),
    checkpointSqlite: version('@langchain/langgraph-checkpoint-sqlite'),
    core: version('@langchain/core'),
    betterSqlite3: version('better-sqlite3'),
    node: process.versions.node,
    state: opts.delta ? 'MessagesDeltaValue (DeltaChannel)' : 'MessagesAnnotation',
    durability: opts.durability ?? 'async (default)',
  };
}
