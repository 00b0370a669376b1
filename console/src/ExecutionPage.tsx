/**
 * One execution: the graph with each node's status and timing, the thread tree (fork children and
 * copies), pending interactions with their controls, and per thread the conversation at any step,
 * its variables and its step records, with "copy from this step" and "run the copy".
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import {
  type AwsCost,
  api,
  type Conversation,
  type ExecutionPage,
  formatAwsUsd,
  formatBytes,
  formatDuration,
  formatTime,
  formatUsd,
  type GraphView,
  type Interaction,
  type JournalEvent,
  type Message,
  newestReads,
  type RecordedEdit,
  type RunCost,
  STATE_EVENTS,
  type StepFunctionsView,
  type StoredBytes,
  type StreamingReply,
  subscribe,
  type ThreadReport,
  type ThreadSteps,
  type TokenEvent,
} from './api.ts';
import { CopyEditor } from './CopyEditor.tsx';
import { Graph } from './Graph.tsx';
import { NodeInput } from './NodeInput.tsx';
import { NodeLogs } from './NodeLogs.tsx';
import { type LiveReplies, NO_REPLIES, repliesOf, withSnapshot, withToken } from './streaming.ts';
import { Timeline } from './Timeline.tsx';
import { navigate, StatusBadge } from './ui.tsx';

/**
 * A tool result the model was given as an error ("Error: …", as the tool loop writes every failed
 * call): shown apart, as inspect marks it, so a failed call does not look like an answer.
 */
const failedToolResult = (message: Message): boolean =>
  message.role === 'tool' && message.content.startsWith('Error: ');

/** Statuses of a run Stop can still end (an interrupted one too: its process is gone, not the run). */
const STOPPABLE: ReadonlySet<string> = new Set(['RUNNING', 'INTERRUPTED']);

/**
 * A button that acts on the run: disabled with `busyLabel` while `act` runs, and then until the page
 * it changed replaces it (the run's new status hides it, or Retry navigates away); a refusal shows
 * beside it (`<name>-error`) and enables it again.
 */
function RunAction(props: {
  name: string;
  className: string;
  title: string;
  label: string;
  busyLabel: string;
  act: () => Promise<unknown>;
}) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string>();
  const run = () => {
    setBusy(true);
    setFailure(undefined);
    props.act().catch((e: Error) => {
      setBusy(false);
      setFailure(e.message);
    });
  };
  return (
    <>
      <button
        type="button"
        className={props.className}
        data-testid={`${props.name}-execution`}
        disabled={busy}
        title={props.title}
        onClick={run}
      >
        {busy ? props.busyLabel : props.label}
      </button>
      {failure && (
        <span className="error" data-testid={`${props.name}-error`}>
          {' '}
          {failure}
        </span>
      )}
    </>
  );
}

/** Stop: the run ends CANCELLED for good (POST /api/executions/:id/cancel). */
function StopButton({ executionId, onStopped }: { executionId: string; onStopped: () => void }) {
  return (
    <RunAction
      name="stop"
      className="danger"
      title="End this run CANCELLED: its model and tool calls are closed, and it cannot be resumed"
      label="Stop"
      busyLabel="Stopping…"
      act={() => api.cancel(executionId, 'stopped from the console').then(() => onStopped())}
    />
  );
}

/** Resume: an interrupted run runs again in this server from where it stopped (`stepthread resume`). */
function ResumeButton({ executionId, onResumed }: { executionId: string; onResumed: () => void }) {
  return (
    <RunAction
      name="resume"
      className="primary"
      title="Run it again from where it stopped: its committed steps are not run again"
      label="Resume"
      busyLabel="Resuming…"
      act={() => api.resume(executionId).then(() => onResumed())}
    />
  );
}

/** Statuses of a run Retry offers to run again (as a copy: the run itself stays as it ended). */
const RETRYABLE: ReadonlySet<string> = new Set(['FAILED', 'TIMEOUT', 'CANCELLED']);

/**
 * Retry: a copy of the root thread from the node it failed at (before that node's step), run at
 * once; a run that ended with no node named is copied as it stopped.
 */
function RetryButton({ rootThreadId, nodeId }: { rootThreadId: string; nodeId: string | undefined }) {
  const from = nodeId ?? 'where it stopped';
  const retry = async () => {
    const copy = await api.copy(rootThreadId, nodeId === undefined ? {} : { fromNodeId: nodeId });
    const started = await api.run(copy.threadId);
    navigate('executions', started.executionId);
  };
  return (
    <RunAction
      name="retry"
      className="primary"
      title={`Copy the run from ${from} and run the copy`}
      label={`Retry from ${from}`}
      busyLabel="Retrying…"
      act={retry}
    />
  );
}

/** Compare this run's root thread with another thread or execution (its root thread). */
function CompareWith({ threadId }: { threadId: string }) {
  const [other, setOther] = useState('');
  return (
    <form
      className="row"
      data-testid="compare-with"
      onSubmit={(event) => {
        event.preventDefault();
        if (other.trim()) navigate('compare', threadId, other.trim());
      }}
    >
      <input
        aria-label="another thread or execution id"
        placeholder="compare with… (thread or execution id)"
        data-testid="compare-with-id"
        value={other}
        onChange={(event) => setOther(event.target.value)}
      />
      <button type="submit">Compare</button>
    </form>
  );
}

export function ExecutionView({ executionId }: { executionId: string }) {
  const [page, setPage] = useState<ExecutionPage>();
  const [graph, setGraph] = useState<GraphView>();
  const [nodes, setNodes] = useState<Record<string, unknown>>({});
  /** Every node the run can name, a SUBGRAPH's inlined ones too (the node panel shows any). */
  const [allNodes, setAllNodes] = useState<Record<string, unknown>>({});
  const [error, setError] = useState<string>();
  const [threadId, setThreadId] = useState<string>();
  const [selectedNode, setSelectedNode] = useState<string>();
  const [version, setVersion] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  const [reads] = useState(newestReads);
  /** LLM replies streaming now: from the page as read, and the token events since. */
  const [replies, setReplies] = useState<LiveReplies>(NO_REPLIES);

  const refresh = useCallback(() => {
    const newest = reads();
    api.execution(executionId).then(
      (next) => {
        if (!newest()) return;
        setPage(next);
        setReplies((current) => withSnapshot(current, next.streaming));
        setVersion((v) => v + 1);
      },
      (e: Error) => {
        if (newest()) setError(e.message);
      },
    );
  }, [executionId, reads]);

  useEffect(() => {
    refresh();
    // Live: every event of this execution schedules one re-read (events come in bursts).
    return subscribe(
      executionId,
      (type, data) => {
        // A reply grows with each token, with no re-read of the page.
        if (type === 'token') {
          setReplies((current) => withToken(current, data as TokenEvent));
          return;
        }
        clearTimeout(timer.current);
        timer.current = setTimeout(refresh, 120);
      },
      [...STATE_EVENTS, 'token'],
    );
  }, [executionId, refresh]);

  const workflowId = page?.workflowId;
  // The definition the execution ran, when the server recorded it; else the file as it is now.
  const definition = page?.definition;
  useEffect(() => {
    const show = (detail: { graph?: GraphView; workflow?: unknown }) => {
      setGraph(detail.graph);
      const list = (detail.workflow as { nodes?: AuthorNode[] } | undefined)?.nodes ?? [];
      setNodes(Object.fromEntries(list.map((node) => [node.id, node])));
      setAllNodes(inlinedNodes(list));
    };
    if (definition) show(definition);
    else if (workflowId) api.workflow(workflowId).then(show);
  }, [workflowId, definition]);

  if (error && !page) return <p className="error">{error}</p>;
  if (!page) return <p className="muted">Loading…</p>;
  const { execution } = page;
  const currentThread = threadId ?? page.rootThreadId;
  // The thread the selected node ran on (a fork child for a node inside a branch).
  const nodeThread = selectedNode ? (page.nodeStatus[selectedNode]?.threadId ?? currentThread) : undefined;
  return (
    <>
      <h1>
        Execution {execution.executionId.slice(0, 8)} <StatusBadge status={execution.status} />{' '}
        {execution.status === 'INTERRUPTED' && execution.resume && (
          <ResumeButton executionId={execution.executionId} onResumed={refresh} />
        )}{' '}
        {STOPPABLE.has(execution.status) && (
          <StopButton executionId={execution.executionId} onStopped={refresh} />
        )}
        {RETRYABLE.has(execution.status) && page.rootThreadId && (
          <RetryButton rootThreadId={page.rootThreadId} nodeId={page.error?.nodeId} />
        )}
      </h1>
      <p className="muted" data-testid="execution-status" data-status={execution.status}>
        workflow <a href={`#/workflows/${encodeURIComponent(page.workflowId)}`}>{page.workflowId}</a> ·
        started {formatTime(execution.startTime)}
        {execution.durationMs !== undefined && ` · ${formatDuration(execution.durationMs)}`} · id{' '}
        {execution.executionId}
        {execution.consoleUrl && (
          <>
            {' · '}
            <a href={execution.consoleUrl} target="_blank" rel="noreferrer">
              Step Functions console
            </a>
          </>
        )}
      </p>
      {page.error && (
        <p className="error execution-error" data-testid="execution-error">
          <strong>{page.error.code}</strong>: {page.error.message}
        </p>
      )}
      {/* Why a run failed comes first, under its title; then what it cost. */}
      {page.cost && <RunCostLine cost={page.cost} {...(page.awsCost ? { aws: page.awsCost } : {})} />}
      {execution.resume && (
        <p className="panel" data-testid="interrupted">
          The process that ran it stopped before it ended: resume it with <code>{execution.resume}</code>
        </p>
      )}
      {(execution.continuedFrom || execution.continuedAs) && (
        <p className="muted" data-testid="continued">
          {execution.continuedFrom && (
            <>
              continues{' '}
              <a href={`#/executions/${encodeURIComponent(execution.continuedFrom)}`}>
                {execution.continuedFrom}
              </a>{' '}
            </>
          )}
          {execution.continuedAs && (
            <>
              continued in{' '}
              <a href={`#/executions/${encodeURIComponent(execution.continuedAs)}`}>
                {execution.continuedAs}
              </a>
            </>
          )}
        </p>
      )}
      {page.pending.length > 0 && (
        <div className="panel" data-testid="pending">
          <h2>Waiting for you</h2>
          {page.pending.map((interaction) => (
            <InteractionForm
              key={interaction.interactionId}
              interaction={interaction}
              {...(execution.resume ? { resume: execution.resume } : {})}
              onDone={refresh}
            />
          ))}
        </div>
      )}
      <div className="columns">
        <div>
          {graph && (
            <Graph
              graph={graph}
              status={page.nodeStatus}
              {...(selectedNode ? { selected: selectedNode } : {})}
              onSelect={(nodeId) => {
                setSelectedNode(nodeId);
                const owner = page.nodeStatus[nodeId]?.threadId;
                if (owner) setThreadId(owner);
              }}
            />
          )}
          {selectedNode && (
            <div className="panel" style={{ marginTop: '1rem' }} data-testid="node-panel">
              <h2>
                Node {selectedNode}{' '}
                {page.nodeStatus[selectedNode] && (
                  <StatusBadge status={page.nodeStatus[selectedNode].status} />
                )}
              </h2>
              <p className="muted">
                {page.nodeStatus[selectedNode]
                  ? `${page.nodeStatus[selectedNode].runs} run(s), last attempt ${page.nodeStatus[selectedNode].attempt ?? 1}, ${formatDuration(page.nodeStatus[selectedNode].durationMs)}`
                  : 'not run in this execution'}
                . Its steps (output, error, tokens) are listed under Steps; its input is the thread as it was
                before its step (move the slider there) and this configuration:
              </p>
              <NodeConfig node={allNodes[selectedNode]} />
              {nodeThread && <NodeInput threadId={nodeThread} nodeId={selectedNode} version={version} />}
              {nodeThread && <NodeLogs threadId={nodeThread} nodeId={selectedNode} version={version} />}
              <button type="button" onClick={() => setSelectedNode(undefined)}>
                Show every step
              </button>
            </div>
          )}
          {page.stepFunctions && <StepFunctionsPanel view={page.stepFunctions} />}
          <div className="panel" style={{ marginTop: '1rem' }}>
            <h2>Timeline</h2>
            <Timeline
              threads={page.threads}
              rootThreadId={page.rootThreadId}
              onSelect={(nodeId, owner) => {
                setSelectedNode(nodeId);
                setThreadId(owner);
              }}
            />
          </div>
          <div className="panel" style={{ marginTop: '1rem' }}>
            <h2>Threads</h2>
            {page.rootThreadId && <CompareWith threadId={page.rootThreadId} />}
            <ThreadTree
              page={page}
              current={currentThread}
              onSelect={(id) => {
                setThreadId(id);
                setSelectedNode(undefined);
              }}
            />
          </div>
        </div>
        <div>
          {currentThread && (
            <ThreadPanel
              key={currentThread}
              threadId={currentThread}
              report={page.threads.find((thread) => thread.threadId === currentThread)}
              {...(graph ? { drawnTypes: drawnTypesOf(graph) } : {})}
              version={version}
              {...(selectedNode ? { selectedNode } : {})}
              streaming={repliesOf(replies, currentThread)}
              nodes={nodes}
            />
          )}
        </div>
      </div>
    </>
  );
}

/** A node as its workflow file writes it; a SUBGRAPH's holds its child workflow. */
interface AuthorNode {
  id: string;
  type?: string;
  config?: { workflow?: { nodes?: AuthorNode[] } };
}

/**
 * The nodes by the id a run gives them: a SUBGRAPH's child nodes (at any depth) as
 * `<subgraph id>.<node id>`, as the graph and the steps name them.
 */
function inlinedNodes(list: readonly AuthorNode[], prefix = ''): Record<string, AuthorNode> {
  const byId: Record<string, AuthorNode> = {};
  for (const node of list) {
    byId[prefix + node.id] = node;
    const child = node.type === 'SUBGRAPH' ? node.config?.workflow?.nodes : undefined;
    if (child) Object.assign(byId, inlinedNodes(child, `${prefix}${node.id}.`));
  }
  return byId;
}

/**
 * A node's configuration as JSON; a CODE node's source apart, as the code it is (its own lines and
 * indentation), not one escaped JSON string.
 */
function NodeConfig({ node }: { node: unknown }) {
  const shown = node as { type?: unknown; config?: Record<string, unknown> } | undefined;
  const code = shown?.type === 'CODE' ? shown.config?.code : undefined;
  if (typeof code !== 'string') return <pre>{JSON.stringify(node ?? null, null, 2)}</pre>;
  const { code: _code, ...rest } = shown!.config!;
  return (
    <>
      <pre>{JSON.stringify({ ...shown, config: rest }, null, 2)}</pre>
      <p className="muted">code:</p>
      <pre className="code" data-testid="node-code">
        {code}
      </pre>
    </>
  );
}

/** A deployed execution as Step Functions sees it: status, input and output, each state's timing. */
function StepFunctionsPanel({ view }: { view: StepFunctionsView }) {
  return (
    <div className="panel" style={{ marginTop: '1rem' }} data-testid="step-functions">
      <h2>
        Step Functions <StatusBadge status={view.status} />
      </h2>
      <p className="muted">
        started {formatTime(view.startDate)}
        {view.stopDate && ` · stopped ${formatTime(view.stopDate)}`}
        {view.consoleUrl && (
          <>
            {' · '}
            <a href={view.consoleUrl} target="_blank" rel="noreferrer">
              open in the Step Functions console
            </a>
          </>
        )}
      </p>
      {view.error && (
        <p className="error">
          {view.error}
          {view.cause && `: ${view.cause}`}
        </p>
      )}
      <details>
        <summary>input and output</summary>
        <pre>{JSON.stringify({ input: view.input, output: view.output }, null, 2)}</pre>
      </details>
      <details>
        <summary>
          states ({view.states.length}
          {view.historyComplete ? '' : ', the newest'})
        </summary>
        <table>
          <thead>
            <tr>
              <th>state</th>
              <th>status</th>
              <th>entered</th>
              <th>duration</th>
              <th>attempts</th>
            </tr>
          </thead>
          <tbody>
            {view.states.map((state, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a state may be entered many times; order is its identity
              <tr key={i}>
                <td>
                  {state.stateName} <span className="muted">{state.stateType}</span>
                </td>
                <td>
                  <StatusBadge status={state.status} />{' '}
                  {state.error && <span className="muted">{state.error}</span>}
                </td>
                <td>{formatTime(state.enteredAt)}</td>
                <td>{formatDuration(state.durationMs)}</td>
                <td>{state.attempts ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

function ThreadTree({
  page,
  current,
  onSelect,
}: {
  page: ExecutionPage;
  current: string | undefined;
  onSelect: (threadId: string) => void;
}) {
  const byId = new Map(page.threads.map((thread) => [thread.threadId, thread]));
  const root = page.rootThreadId ? byId.get(page.rootThreadId) : undefined;
  const item = (thread: ThreadReport) => (
    <li key={thread.threadId}>
      <button
        type="button"
        className={`link${thread.threadId === current ? ' current' : ''}`}
        data-testid={`thread-${thread.forkPathId ?? 'root'}`}
        onClick={() => onSelect(thread.threadId)}
      >
        {thread.forkPathId ? `path ${thread.forkPathId}` : 'root thread'}
      </button>{' '}
      <StatusBadge status={thread.status} /> <span className="muted">{thread.threadId}</span>
      {thread.copiedFrom && (
        <span className="muted" data-testid="copied-from">
          {' '}
          · a copy of {thread.copiedFrom} (its steps before the copy show in the graph)
        </span>
      )}
      {thread.children.length > 0 && (
        <ul>{thread.children.flatMap((child) => (byId.has(child) ? [item(byId.get(child)!)] : []))}</ul>
      )}
      {page.copies.some((copy) => copy.copiedFrom === thread.threadId) && (
        <ul>
          {page.copies
            .filter((copy) => copy.copiedFrom === thread.threadId)
            .map((copy) => (
              <li key={copy.executionId}>
                copy <a href={`#/executions/${encodeURIComponent(copy.executionId)}`}>{copy.threadId}</a>{' '}
                <StatusBadge status={copy.status} /> ·{' '}
                <a
                  data-testid="compare-copy"
                  href={`#/compare/${encodeURIComponent(thread.threadId)}/${encodeURIComponent(copy.threadId)}`}
                >
                  compare with this thread
                </a>
              </li>
            ))}
        </ul>
      )}
    </li>
  );
  if (!root) return <p className="muted">The run is starting…</p>;
  return (
    <div className="tree">
      <ul>{item(root)}</ul>
    </div>
  );
}

/**
 * Why a question cannot be answered in the page, and how to answer it: an interrupted run is resumed
 * with its answer (`respond` answers a deployed stack's runs, not local ones). `resume` carries
 * `--answers` for the questions the run stopped at, with example values.
 */
function NotAnswerableHere({
  interaction,
  resume,
}: {
  interaction: Interaction;
  resume: string | undefined;
}) {
  if (resume === undefined) {
    return <p className="muted">Its run is not running in this server: answer it where it runs.</p>;
  }
  return (
    <p className="muted" data-testid="resume-to-answer">
      Its run is not running in this server: resume it with your answer to {interaction.nodeId} in{' '}
      <code>--answers</code>, <code>{resume}</code>
    </p>
  );
}

/** A tool call an LLM node holds for approval: which tool, with what arguments, and what the model said. */
function HeldToolCall({ call }: { call: NonNullable<Interaction['toolCall']> }) {
  return (
    <div data-testid="tool-call">
      <p>
        Call tool <code data-testid="tool-name">{call.name}</code>?
      </p>
      <pre data-testid="tool-arguments">{JSON.stringify(call.arguments, null, 2)}</pre>
      {call.message.trim() !== '' && (
        <p>
          <span className="muted">The model said: </span>
          <q data-testid="tool-message">{call.message}</q>
        </p>
      )}
    </div>
  );
}

function InteractionForm({
  interaction,
  resume,
  onDone,
}: {
  interaction: Interaction;
  /** The command that resumes its interrupted run. */
  resume?: string;
  onDone: () => void;
}) {
  const [value, setValue] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const send = async (body: unknown) => {
    setBusy(true);
    setError(undefined);
    try {
      await api.answer(interaction.interactionId, body);
      onDone();
    } catch (e) {
      setError((e as Error).message);
      // Answered or gone meanwhile (another tab, the CLI): read the page again, which drops the form.
      onDone();
    } finally {
      setBusy(false);
    }
  };
  const disabled = busy || !interaction.answerable;
  return (
    <div className="interaction" data-testid={`interaction-${interaction.nodeId}`}>
      <div>
        <strong>{interaction.nodeId}</strong> <span className="muted">{interaction.interactionType}</span>
      </div>
      {interaction.toolCall ? (
        <HeldToolCall call={interaction.toolCall} />
      ) : (
        interaction.message && <p>{interaction.message}</p>
      )}
      {!interaction.answerable && <NotAnswerableHere interaction={interaction} resume={resume} />}
      {interaction.interactionType === 'ask_for_approval' && (
        <div className="row">
          <button
            type="button"
            className="primary"
            data-testid="approve"
            disabled={disabled}
            onClick={() => send({ approve: true })}
          >
            Approve
          </button>
          <input
            type="text"
            aria-label="reason (optional)"
            placeholder="reason (optional)"
            data-testid="reason"
            value={reason}
            disabled={disabled}
            onChange={(event) => setReason(event.target.value)}
          />
          <button
            type="button"
            className="danger"
            data-testid="reject"
            disabled={disabled}
            onClick={() => send({ reject: true, ...(reason.trim() === '' ? {} : { reason: reason.trim() }) })}
          >
            Reject
          </button>
        </div>
      )}
      {interaction.interactionType === 'ask_for_selection' && (
        <div className="row">
          {(interaction.options ?? []).map((option, index) => (
            <button
              type="button"
              key={option}
              data-testid={`select-${index}`}
              disabled={disabled}
              onClick={() => send({ select: index })}
            >
              {option}
            </button>
          ))}
        </div>
      )}
      {interaction.interactionType === 'ask_for_input' && (
        <div>
          <textarea
            rows={3}
            aria-label="answer (JSON, or plain text)"
            placeholder={
              interaction.answerVariable
                ? `${/^[aeiou]/.test(interaction.answerVariable.type) ? 'an' : 'a'} ${interaction.answerVariable.type}, stored in ${interaction.answerVariable.name}`
                : undefined
            }
            data-testid="answer-input"
            value={value}
            onChange={(event) => setValue(event.target.value)}
          />
          <button
            type="button"
            className="primary"
            disabled={disabled}
            onClick={() => send({ input: typedAnswer(value, interaction.answerVariable?.type) })}
          >
            Send
          </button>
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}

/**
 * An ask_for_input answer as typed: JSON when it parses (`42`, `{"a": 1}`, `"quoted"`), else the text
 * itself, as the terminal's prompt and `stepthread respond --input` read it; for a variable declared
 * `string`, the text itself (`42` answers "42"), a quoted JSON string its content.
 */
function typedAnswer(text: string, type: string | undefined): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  return type === 'string' && typeof value !== 'string' ? text : value;
}

/**
 * Each node's type as the graph draws it: a step records an inlined subgraph's START and END as type
 * SUBGRAPH (they run under its boundary nodes), the graph as the START and END they are.
 */
function drawnTypesOf(graph: GraphView): Record<string, string> {
  return Object.fromEntries(graph.nodes.map((node) => [node.id, node.type]));
}

function ThreadPanel({
  threadId,
  report,
  drawnTypes,
  version,
  selectedNode,
  streaming,
  nodes,
}: {
  threadId: string;
  report: ThreadReport | undefined;
  drawnTypes?: Record<string, string>;
  version: number;
  selectedNode?: string;
  /** The workflow's nodes by id, as the run had them (the copy editor shows the node's). */
  nodes: Record<string, unknown>;
  /** The thread's LLM replies streaming now (shown after its latest step). */
  streaming: StreamingReply[];
}) {
  const [steps, setSteps] = useState<ThreadSteps>();
  /** The first step listed, once "show earlier steps" asked for more than the latest (the API's default). */
  const [from, setFrom] = useState<number>();
  const [step, setStep] = useState<number>();
  const [conversation, setConversation] = useState<Conversation>();
  const [events, setEvents] = useState<JournalEvent[]>();
  const [copied, setCopied] = useState<{ threadId: string; fromStep: number; edits: number }>();
  /** The step "copy from here" was clicked on: its editor is open. */
  const [editing, setEditing] = useState<{ step: number; nodeId: string }>();
  const [error, setError] = useState<string>();
  const [stored, setStored] = useState<StoredBytes>();

  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the page's refresh signal
  useEffect(() => {
    // A read answering after the next one was asked is dropped (see newestReads).
    let current = true;
    api.steps(threadId, from).then(
      (next) => current && setSteps(next),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, from, version]);
  // Another thread starts from its latest steps again.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset when the thread changes
  useEffect(() => setFrom(undefined), [threadId]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the page's refresh signal
  useEffect(() => {
    let current = true;
    api.events(threadId, from).then(
      (next) => current && setEvents(next.events),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, from, version]);
  // It reads every item of the thread: again when the thread or its status changes, not on each refresh.
  const status = report?.status;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `status` is when the bytes may have moved
  useEffect(() => {
    let current = true;
    setStored(undefined);
    api.storedBytes(threadId).then(
      (next) => current && setStored(next),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, status]);
  const stepCount = steps?.stepCount ?? 0;
  const shown = step ?? stepCount;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the page's refresh signal
  useEffect(() => {
    let current = true;
    api.conversation(threadId, step).then(
      (next) => current && setConversation(next),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, step, version]);

  const runCopy = async () => {
    if (!copied) return;
    try {
      const started = await api.run(copied.threadId);
      navigate('executions', started.executionId);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const canCopy = report !== undefined && report.forkPathId === undefined && report.status !== 'RUNNING';
  const visible = (steps?.steps ?? []).filter((row) => !selectedNode || row.nodeId === selectedNode);
  // The failure that ended the thread is most often its failed step's own error, shown in its row:
  // below the table only the errors no listed step shows.
  const shownInRows = new Set(
    (steps?.steps ?? []).flatMap((row) => (row.error ? [`${row.error.code}: ${row.error.message}`] : [])),
  );
  const threadOnlyErrors = (report?.errors ?? []).filter((e) => !shownInRows.has(`${e.code}: ${e.message}`));
  // A step's record holds the thread's running token total: each step's own use is the difference
  // from the step before that had one (the first such step shows the total it started from too).
  const tokensOfStep = new Map<number, { used?: number; total: number }>();
  let lastTotal: number | undefined;
  for (const row of steps?.steps ?? []) {
    if (!row.tokenUsage) continue;
    const total = row.tokenUsage.totalTokens;
    tokensOfStep.set(row.step, { ...(lastTotal === undefined ? {} : { used: total - lastTotal }), total });
    lastTotal = total;
  }

  return (
    <div data-testid="thread-panel" data-thread={threadId}>
      <div className="panel">
        <h2>
          {report?.forkPathId ? `Path ${report.forkPathId}` : 'Root thread'}{' '}
          {report && <StatusBadge status={report.status} />}
        </h2>
        <div className="muted">{threadId}</div>
        {report?.edits && report.edits.length > 0 && <CopyEdits edits={report.edits} />}
        <label htmlFor="step-slider" className="muted">
          Conversation after step {shown} of {stepCount}
        </label>
        <input
          id="step-slider"
          data-testid="step-slider"
          type="range"
          min={0}
          max={stepCount}
          value={shown}
          // Its range is the thread's step count: until the steps are read it has none to move over.
          disabled={steps === undefined}
          onChange={(event) => setStep(Number(event.target.value))}
        />
        <div className="chat" data-testid="conversation">
          {(conversation?.messages ?? []).map((message, index) => (
            <div
              // biome-ignore lint/suspicious/noArrayIndexKey: messages are positional
              key={index}
              className={`msg msg-${message.role}${failedToolResult(message) ? ' msg-tool-failed' : ''}`}
              data-testid={failedToolResult(message) ? 'tool-result-failed' : undefined}
            >
              <div className="role">
                {message.role}
                {message.name ? ` · ${message.name}` : ''}
                {failedToolResult(message) ? ' · failed' : ''}
              </div>
              {message.content}
              {(message.toolCalls ?? []).map((call) => (
                <div key={call.id} className="muted">
                  → {call.name}({JSON.stringify(call.arguments)})
                </div>
              ))}
            </div>
          ))}
          {step === undefined && <StreamingMessages replies={streaming} />}
          {conversation && conversation.messages.length === 0 && streaming.length === 0 && (
            <p className="muted">No messages yet.</p>
          )}
        </div>
        <h2>Variables</h2>
        <pre data-testid="variables">{JSON.stringify(conversation?.variables ?? null, null, 2)}</pre>
      </div>
      <div className="panel">
        <h2>
          Steps{selectedNode ? ` of ${selectedNode}` : ''}{' '}
          {copied && (
            <span className="row" style={{ display: 'inline-flex' }}>
              <span className="muted" data-testid="copied">
                copied from step {copied.fromStep}
                {copied.edits > 0 ? ` with ${copied.edits} edit(s)` : ''}: {copied.threadId}
              </span>
              <button type="button" className="primary" data-testid="run-copy" onClick={runCopy}>
                Run the copy
              </button>
            </span>
          )}
        </h2>
        {error && <p className="error">{error}</p>}
        {editing && (
          <CopyEditor
            key={editing.step}
            threadId={threadId}
            step={editing.step}
            nodeId={editing.nodeId}
            nodeConfig={nodes[editing.nodeId]}
            onClose={() => setEditing(undefined)}
            onCopied={(copy, fromStep) => {
              setEditing(undefined);
              setCopied({ threadId: copy.threadId, fromStep, edits: copy.metadata.edits?.length ?? 0 });
            }}
          />
        )}
        {steps && steps.from > 1 && (
          <p className="muted" data-testid="earlier-steps">
            {steps.from - 1} earlier step{steps.from === 2 ? '' : 's'} not listed (nor their events){' '}
            <button
              type="button"
              data-testid="show-earlier-steps"
              onClick={() => setFrom(Math.max(1, steps.from - EARLIER_STEPS))}
            >
              Show {Math.min(EARLIER_STEPS, steps.from - 1)} earlier
            </button>
          </p>
        )}
        <table data-testid="steps" className="steps">
          <thead>
            <tr>
              <th className="fit">#</th>
              <th className="fit">Node</th>
              <th className="fit" title="status, time, tokens used (and the thread's total)">
                Run
              </th>
              <th>Output / error</th>
            </tr>
          </thead>
          <tbody>
            {visible.map((row) => (
              <tr key={row.step} data-testid={`step-${row.step}`} data-node={row.nodeId}>
                <td className="fit">{row.step}</td>
                <td className="fit">
                  {row.nodeId}
                  <div className="muted" data-testid="step-type">
                    {(drawnTypes?.[row.nodeId] ?? row.nodeType).toLowerCase()}
                  </div>
                  {canCopy && row.step > 1 && row.nodeType !== 'JOIN' && (
                    <button
                      type="button"
                      className="small"
                      data-testid={`copy-from-${row.step}`}
                      title="A new thread as this one was before this step, ready to run it again"
                      onClick={() => {
                        setError(undefined);
                        setEditing({ step: row.step, nodeId: row.nodeId });
                      }}
                    >
                      Copy from here
                    </button>
                  )}
                </td>
                <td className="fit">
                  <StatusBadge status={row.status} />
                  {(row.toolCalls?.failed ?? 0) > 0 && (
                    // Completed, but not as if all went well: the model read errors (as run's ⚠ says).
                    <div
                      className="tool-calls-failed"
                      data-testid="step-tool-calls-failed"
                      title="the model was shown these tool calls' errors"
                    >
                      ⚠ {row.toolCalls!.failed} of {row.toolCalls!.calls} tool{' '}
                      {row.toolCalls!.calls === 1 ? 'call' : 'calls'} failed
                    </div>
                  )}
                  {row.attempt > 1 && <div className="muted">attempt {row.attempt}</div>}
                  <div data-testid="step-time">{formatDuration(row.durationMs)}</div>
                  <StepTokens tokens={tokensOfStep.get(row.step)} />
                  {row.usage && (
                    <div
                      className="step-cost"
                      data-testid="step-cost"
                      title="this step's model calls: tokens in and out, and their cost"
                    >
                      {/* Short pieces that wrap, so the output column keeps its width. */}
                      <span className="nowrap">{row.usage.inputTokens} in</span> ·{' '}
                      <span className="nowrap">{row.usage.outputTokens} out</span> ·{' '}
                      <span className="nowrap">
                        {row.usage.costUsd === undefined ? 'no price' : formatUsd(row.usage.costUsd)}
                      </span>
                    </div>
                  )}
                </td>
                <td className="output">
                  {row.error ? (
                    <span className="error">
                      {row.error.code}: {row.error.message}
                    </span>
                  ) : row.output === undefined ? (
                    ''
                  ) : (
                    <pre>{JSON.stringify(row.output, null, 2)}</pre>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {threadOnlyErrors.length > 0 && (
          <div className="error" data-testid="thread-errors">
            {threadOnlyErrors.map((e) => (
              <div key={`${e.code}${e.message}`}>
                {e.code}: {e.message}
              </div>
            ))}
          </div>
        )}
        {report && <p className="muted">started {formatTime(report.startTime)}</p>}
        {stored && (
          <p
            className="muted"
            data-testid="stored-bytes"
            title="DynamoDB items as DynamoDB bills their storage (size + 100 B each); S3 objects this thread wrote, not those it shares with the thread it was forked or copied from"
          >
            {`stored ${formatBytes(stored.bytes)}: ${plural(stored.items, 'item')} (${formatBytes(stored.itemBytes)}) in DynamoDB, ${plural(stored.objects, 'object')} (${formatBytes(stored.objectBytes)}) in S3`}
          </p>
        )}
      </div>
      <EventsPanel events={events} selectedNode={selectedNode} />
    </div>
  );
}

/** `1 item`, `3 items`. */
function plural(count: number, one: string): string {
  return `${count} ${one}${count === 1 ? '' : 's'}`;
}

/** Replies arriving from the model now, growing as their tokens come; their step has not committed yet. */
function StreamingMessages({ replies }: { replies: StreamingReply[] }) {
  return replies.flatMap((reply) =>
    reply.replies.map((text, index) => (
      <div
        // biome-ignore lint/suspicious/noArrayIndexKey: a node's replies are positional
        key={`${reply.nodeId}/${index}`}
        className="msg msg-assistant msg-streaming"
        data-testid="streaming-reply"
        data-node={reply.nodeId}
      >
        <div className="role">assistant · {reply.nodeId} · streaming…</div>
        {index === 0 && reply.cutChars ? '… ' : ''}
        {text}
      </div>
    )),
  );
}

/** The tokens a step used, and the thread's total after it (the first such step: the total only). */
/** The run's cost (all its threads), and each limit of its budget with what is spent of it. */
function RunCostLine({ cost, aws }: { cost: RunCost; aws?: AwsCost }) {
  return (
    <div className="muted" data-testid="run-cost">
      cost <strong data-testid="run-cost-usd">{formatUsd(cost.costUsd)}</strong>
      {aws && (
        <>
          {' '}
          · aws{' '}
          <strong
            data-testid="run-aws-usd"
            title={`deployed, estimated from its steps: ${aws.stateTransitions} state transitions, ${aws.lambdaInvocations} Lambda invocations, ${aws.dynamoReads} DynamoDB reads and ${aws.dynamoWrites} writes, ${aws.s3Puts} S3 PUTs (us-east-1 prices of ${aws.pricesAsOf})`}
          >
            {formatAwsUsd(aws.usd)}
          </strong>
        </>
      )}{' '}
      · {cost.tokens} tokens ({cost.inputTokens} in, {cost.outputTokens} out) ·{' '}
      {plural(cost.modelCalls, 'model call')} · {plural(cost.toolCalls, 'tool call')}
      {cost.unpricedCalls > 0 && ` · ${cost.unpricedCalls} call(s) of a model with no price not counted`}
      {Object.entries(cost.spent ?? {}).map(([name, { spent, limit, fraction }]) => {
        const shown = (n: number) => (name === 'maxCostUsd' ? formatUsd(n) : String(n));
        return (
          <div key={name} data-testid={`budget-${name}`} className={fraction >= 1 ? 'error' : ''}>
            budget {name} {shown(limit)}: {shown(spent)} spent{' '}
            <meter min={0} max={1} low={0.8} high={0.99} value={Math.min(fraction, 1)} />{' '}
            {Math.round(fraction * 100)}%
          </div>
        );
      })}
    </div>
  );
}

function StepTokens({ tokens }: { tokens: { used?: number; total: number } | undefined }) {
  // Before the thread's first model call its total is 0: nothing to say.
  if (tokens === undefined || (tokens.used === undefined && tokens.total === 0)) return null;
  if (tokens.used === undefined) {
    return (
      <div data-testid="step-tokens" className="muted" title="the thread's total after this step">
        {tokens.total} tokens in all
      </div>
    );
  }
  return (
    <div data-testid="step-tokens">
      <span title="used by this step">+{tokens.used} tokens</span>
      <div className="muted" title="the thread's total after this step">
        {tokens.total} in all
      </div>
    </div>
  );
}

/** Steps "show earlier steps" adds each time (the API gives the latest 100 at first). */
const EARLIER_STEPS = 100;

/** Hours to milliseconds, local time: events of one step are milliseconds apart. */
function timeOfDay(iso: string): string {
  return new Date(iso).toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
    hour12: false,
  });
}

/** Fields every journal entry has, shown in their own columns rather than in the details. */
const EVENT_COLUMNS = new Set(['type', 'at', 'nodeId', 'threadId', 'workflowId']);

/** The thread's journal, oldest first: node lifecycle, hooks, variable changes, interactions, copies. */
function EventsPanel({
  events,
  selectedNode,
}: {
  events: JournalEvent[] | undefined;
  selectedNode?: string;
}) {
  const visible = (events ?? []).filter((event) => !selectedNode || event.nodeId === selectedNode);
  return (
    <div className="panel">
      <h2>
        Events{selectedNode ? ` of ${selectedNode}` : ''} <span className="muted">({visible.length})</span>
      </h2>
      <table data-testid="events" className="events">
        <thead>
          <tr>
            <th className="fit">Time</th>
            <th className="fit">Event</th>
            <th className="fit">Node</th>
            <th>Details</th>
          </tr>
        </thead>
        <tbody>
          {visible.map((event, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the journal is append-only, so positions are stable
            <tr key={index} data-testid="event" data-type={event.type} data-event-node={event.nodeId}>
              <td className="muted fit" title={formatTime(event.at)}>
                {timeOfDay(event.at)}
              </td>
              <td className="fit">{event.type}</td>
              <td className="fit">{event.nodeId ?? ''}</td>
              <td className="event-details">
                <code>
                  {JSON.stringify(
                    Object.fromEntries(Object.entries(event).filter(([key]) => !EVENT_COLUMNS.has(key))),
                  )}
                </code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What a copy changed before its first step (`metadata.edits`), as `inspect` lists it. */
function CopyEdits({ edits }: { edits: RecordedEdit[] }) {
  const what = (edit: RecordedEdit) =>
    edit.kind === 'input'
      ? 'input'
      : edit.kind === 'variable'
        ? `${edit.scope} variable ${edit.name}`
        : edit.kind === 'nodeConfig'
          ? `node ${edit.nodeId} config ${edit.key}`
          : `profile ${edit.profileId}`;
  return (
    <div data-testid="copy-edits">
      <h3>Edited before its first step</h3>
      <ul>
        {edits.map((edit, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the edits in the order they were applied
          <li key={index} data-testid="copy-edit" data-kind={edit.kind}>
            <code>{what(edit)}</code> ={' '}
            <pre className="edit-value">
              {typeof edit.value === 'string' ? edit.value : JSON.stringify(edit.value)}
            </pre>
          </li>
        ))}
      </ul>
    </div>
  );
}
