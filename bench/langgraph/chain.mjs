// The chain workload of bench.mjs as a function other benches call in their own process (bench/speed.ts):
// START -> n1 -> ... -> nT -> END, each node appending a ~1 KB user message and a 1 KB reply, checkpointed
// by SqliteSaver in a fresh SQLite file. Returns the invoke's wall time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

const FILLER = 'The quick brown fox jumps over the lazy dog. '.repeat(23);
const text = (head) => (head + FILLER).slice(0, 1024);

/** Milliseconds of one invoke of a T-node chain with a SqliteSaver checkpointer. */
export async function runLangGraphChain(T) {
  const dir = mkdtempSync(join(tmpdir(), 'langgraph-chain-'));
  try {
    const graph = new StateGraph(MessagesAnnotation);
    for (let i = 1; i <= T; i++) {
      graph.addNode(`n${i}`, () => ({
        messages: [new HumanMessage(text(`User prompt ${i}: `)), new AIMessage(text(`Reply ${i}: `))],
      }));
    }
    graph.addEdge(START, 'n1');
    for (let i = 1; i < T; i++) graph.addEdge(`n${i}`, `n${i + 1}`);
    graph.addEdge(`n${T}`, END);
    const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.sqlite'));
    const app = graph.compile({ checkpointer: saver });
    const started = performance.now();
    const out = await app.invoke(
      { messages: [] },
      { configurable: { thread_id: 'chain' }, recursionLimit: T + 10 },
    );
    const ms = performance.now() - started;
    if (out.messages.length !== 2 * T) throw new Error(`chain T=${T}: ${out.messages.length} messages`);
    saver.db.close();
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
