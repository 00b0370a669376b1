// The control-step workloads of stepthread's bench/control-steps.ts, as LangGraph.js graphs with a
// SqliteSaver checkpointer in a fresh SQLite file, for that bench to run in its own process:
// - a chat loop of T turns, each turn one ~1 KB prompt and a 1 KB reply: either LangGraph's idiom (one
//   node looping back to itself through a conditional edge) or the same three nodes stepthread runs
//   (loop_start -> llm -> loop_end, the conditional edge back to loop_start);
// - a 4-branch fork/join on a thread of N messages: seed (N messages) -> fork -> b1..b4 (each a prompt
//   and a reply) -> join -> after -> END.
// Each returns the milliseconds of the part it times, measured as stepthread's side measures its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

const FILLER = 'The quick brown fox jumps over the lazy dog. '.repeat(23);
const text = (head) => (head + FILLER).slice(0, 1024);
const exchange = (label) => [
  new HumanMessage(text(`User prompt ${label}: `)),
  new AIMessage(text(`Reply ${label}: `)),
];

async function withSaver(graph, threadId, invoke) {
  const dir = mkdtempSync(join(tmpdir(), 'langgraph-control-'));
  try {
    const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.sqlite'));
    const app = graph.compile({ checkpointer: saver });
    const result = await invoke(app, { configurable: { thread_id: threadId } });
    saver.db.close();
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Milliseconds per turn of a T-turn chat loop: from the first turn's first node to the end of the
 * invoke (its last checkpoint written). `shape` 'idiom': one node and a conditional edge; 'three':
 * loop_start -> llm -> loop_end, as stepthread's LOOP_START -> LLM -> LOOP_END.
 */
export async function runLangGraphChat(T, shape = 'idiom') {
  let first;
  const mark = () => {
    first ??= performance.now();
  };
  const turns = (state) => state.messages.length / 2;
  const graph = new StateGraph(MessagesAnnotation);
  if (shape === 'idiom') {
    graph
      .addNode('llm', (state) => {
        mark();
        return { messages: exchange(turns(state) + 1) };
      })
      .addEdge(START, 'llm')
      .addConditionalEdges('llm', (state) => (turns(state) < T ? 'llm' : END), ['llm', END]);
  } else {
    graph
      .addNode('loop_start', () => {
        mark();
        return {};
      })
      .addNode('llm', (state) => ({ messages: exchange(turns(state) + 1) }))
      .addNode('loop_end', () => ({}))
      .addEdge(START, 'loop_start')
      .addEdge('loop_start', 'llm')
      .addEdge('llm', 'loop_end')
      .addConditionalEdges('loop_end', (state) => (turns(state) < T ? 'loop_start' : END), [
        'loop_start',
        END,
      ]);
  }
  return withSaver(graph, 'chat', async (app, config) => {
    const out = await app.invoke({ messages: [] }, { ...config, recursionLimit: 3 * T + 10 });
    const ms = performance.now() - first;
    if (out.messages.length !== 2 * T) throw new Error(`chat T=${T}: ${out.messages.length} messages`);
    return ms / T;
  });
}

/**
 * Milliseconds of one 4-branch fork/join on a thread of `messages` messages: from the fork node's
 * start to the start of the node after the join (the join's checkpoint written).
 */
export async function runLangGraphForkJoin(messages, branches = 4) {
  let forked;
  let after;
  const names = Array.from({ length: branches }, (_, i) => `b${i + 1}`);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('seed', () => ({
      messages: Array.from({ length: messages / 2 }, (_, i) => exchange(`seed ${i}`)).flat(),
    }))
    .addNode('fork', () => {
      forked = performance.now();
      return {};
    })
    .addNode('join', () => ({}))
    .addNode('after', () => {
      after = performance.now();
      return {};
    });
  for (const name of names) graph.addNode(name, () => ({ messages: exchange(name) }));
  graph.addEdge(START, 'seed').addEdge('seed', 'fork');
  for (const name of names) graph.addEdge('fork', name);
  graph.addEdge(names, 'join').addEdge('join', 'after').addEdge('after', END);
  return withSaver(graph, 'fork-join', async (app, config) => {
    const out = await app.invoke({ messages: [] }, config);
    if (out.messages.length !== messages + 2 * branches) {
      throw new Error(`fork/join: ${out.messages.length} messages`);
    }
    return after - forked;
  });
}
