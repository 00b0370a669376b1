/**
 * The console: hash routes for the home page (workflows and executions), a workflow (graph and start
 * form) and an execution. Every page reads the API and listens to the live stream, so a reload
 * shows the same run and keeps following it.
 */
import { useCallback, useEffect, useState } from 'react';
import {
  api,
  type ExecutionRow,
  formatDuration,
  formatTime,
  newestReads,
  subscribe,
  type WorkflowDetail,
  type WorkflowEntry,
} from './api.ts';
import { ComparePage } from './ComparePage.tsx';
import { ExecutionView } from './ExecutionPage.tsx';
import { Graph } from './Graph.tsx';
import { navigate, StatusBadge } from './ui.tsx';

function readHash(): string[] {
  return window.location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((part) => decodeURIComponent(part));
}

function useHashRoute(): string[] {
  const [route, setRoute] = useState(readHash);
  useEffect(() => {
    const onChange = () => setRoute(readHash());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function App() {
  const [section, id, other] = useHashRoute();
  return (
    <>
      <header className="top">
        <a className="brand" href="#/">
          stepthread console
        </a>
        <a href="#/">Workflows &amp; executions</a>
        <a href="#/compare">Compare</a>
      </header>
      <main>
        {section === 'workflows' && id ? (
          <WorkflowPage key={id} workflowId={id} />
        ) : section === 'executions' && id ? (
          <ExecutionView key={id} executionId={id} />
        ) : section === 'compare' ? (
          <ComparePage key={`${id}/${other}`} {...(id ? { a: id } : {})} {...(other ? { b: other } : {})} />
        ) : (
          <Home />
        )}
      </main>
    </>
  );
}

function Home() {
  const [workflows, setWorkflows] = useState<WorkflowEntry[]>();
  const [executions, setExecutions] = useState<ExecutionRow[]>();
  const [listFailed, setListFailed] = useState(false);
  const [error, setError] = useState<string>();
  const [reads] = useState(newestReads);
  const refresh = useCallback(() => {
    const newest = reads();
    api.executions().then(
      (rows) => newest() && setExecutions(rows),
      (e: Error) => {
        if (!newest()) return;
        setError(e.message);
        setListFailed(true);
      },
    );
  }, [reads]);
  useEffect(() => {
    api.workflows().then(setWorkflows, (e: Error) => setError(e.message));
    refresh();
    return subscribe(undefined, (type) => {
      if (type === 'execution') refresh();
    });
  }, [refresh]);
  return (
    <>
      {error && <p className="error">{error}</p>}
      <h1>Workflows</h1>
      <table data-testid="workflows">
        <thead>
          <tr>
            <th>Workflow</th>
            <th>File</th>
            <th>Valid</th>
            <th>Description</th>
          </tr>
        </thead>
        <tbody>
          {(workflows ?? []).map((workflow) => (
            <tr
              key={workflow.file}
              data-testid={`workflow-file-${workflow.file}`}
              className={isDuplicate(workflow) ? 'error-row' : undefined}
            >
              <td>
                <WorkflowName workflow={workflow} />
              </td>
              <td className="muted">{workflow.file}</td>
              <td>
                {workflow.valid ? (
                  'valid'
                ) : (
                  <span className="error">
                    {workflow.errors.map((error) => `${error.code}: ${error.message}`).join('; ')}
                  </span>
                )}
              </td>
              <td className="muted">{workflow.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h1 style={{ marginTop: '1.5rem' }}>Executions</h1>
      <ExecutionTable rows={executions} failed={listFailed} filters />
    </>
  );
}

/** A file whose workflow id another file of the folder serves (DUPLICATE_WORKFLOW_ID). */
function isDuplicate(workflow: WorkflowEntry): boolean {
  return workflow.errors.some((error) => error.code === 'DUPLICATE_WORKFLOW_ID');
}

/**
 * The workflow's id, linked to its page; a duplicate's page would be the other file's, so its row
 * names its own file instead of linking there.
 */
function WorkflowName({ workflow }: { workflow: WorkflowEntry }) {
  if (workflow.id === undefined) return <>(no id)</>;
  if (isDuplicate(workflow)) {
    return (
      <span className="error" data-testid="duplicate-id">
        {workflow.file}: id {workflow.id} is taken
      </span>
    );
  }
  return <a href={`#/workflows/${encodeURIComponent(workflow.id)}`}>{workflow.id}</a>;
}

/** What the executions list is narrowed to: workflow, status, how recent, and an id searched for. */
interface RowFilter {
  workflow: string;
  status: string;
  /** Started within this many ms of now; 0: any time. */
  withinMs: number;
  search: string;
}

const NO_FILTER: RowFilter = { workflow: '', status: '', withinMs: 0, search: '' };

const WITHIN: { label: string; ms: number }[] = [
  { label: 'any time', ms: 0 },
  { label: 'the last hour', ms: 3_600_000 },
  { label: 'the last 24 hours', ms: 86_400_000 },
  { label: 'the last 7 days', ms: 7 * 86_400_000 },
];

/** The rows the filter keeps; the search matches any part of an execution id or its root thread id. */
export function filterRows(rows: readonly ExecutionRow[], filter: RowFilter, now: number): ExecutionRow[] {
  const search = filter.search.trim().toLowerCase();
  return rows.filter(
    (row) =>
      (filter.workflow === '' || row.workflowId === filter.workflow) &&
      (filter.status === '' || row.status === filter.status) &&
      (filter.withinMs === 0 || now - Date.parse(row.startTime) <= filter.withinMs) &&
      (search === '' ||
        row.executionId.toLowerCase().includes(search) ||
        (row.rootThreadId ?? '').toLowerCase().includes(search)),
  );
}

function FilterBar({
  rows,
  filter,
  onChange,
}: {
  rows: readonly ExecutionRow[];
  filter: RowFilter;
  onChange: (filter: RowFilter) => void;
}) {
  const workflows = [...new Set(rows.map((row) => row.workflowId))].sort();
  const statuses = [...new Set(rows.map((row) => row.status))].sort();
  return (
    <div className="row filters" data-testid="execution-filters">
      <input
        type="search"
        aria-label="search by execution or thread id"
        placeholder="search by id"
        data-testid="filter-search"
        value={filter.search}
        onChange={(event) => onChange({ ...filter, search: event.target.value })}
      />
      <select
        aria-label="workflow"
        data-testid="filter-workflow"
        value={filter.workflow}
        onChange={(event) => onChange({ ...filter, workflow: event.target.value })}
      >
        <option value="">every workflow</option>
        {workflows.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
      <select
        aria-label="status"
        data-testid="filter-status"
        value={filter.status}
        onChange={(event) => onChange({ ...filter, status: event.target.value })}
      >
        <option value="">every status</option>
        {statuses.map((status) => (
          <option key={status} value={status}>
            {status.toLowerCase()}
          </option>
        ))}
      </select>
      <select
        aria-label="started within"
        data-testid="filter-time"
        value={filter.withinMs}
        onChange={(event) => onChange({ ...filter, withinMs: Number(event.target.value) })}
      >
        {WITHIN.map((choice) => (
          <option key={choice.ms} value={choice.ms}>
            started {choice.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * The executions, once the list has answered: until then it says it is loading (an empty list
 * answered is "no executions yet"; a failed read says nothing more than its error). With `filters`,
 * a bar narrows it by workflow, status and time and searches it by id, and two rows ticked can be
 * compared.
 */
export function ExecutionTable({
  rows,
  failed = false,
  filters = false,
  empty = 'No executions yet: start one from a workflow.',
}: {
  rows: ExecutionRow[] | undefined;
  failed?: boolean;
  filters?: boolean;
  /** What an empty list says. */
  empty?: string;
}) {
  const [filter, setFilter] = useState<RowFilter>(NO_FILTER);
  const [ticked, setTicked] = useState<string[]>([]);
  if (rows === undefined) {
    return failed ? null : (
      <p className="muted" data-testid="executions-loading">
        Loading executions…
      </p>
    );
  }
  if (rows.length === 0) {
    return (
      <p className="muted" data-testid="no-executions">
        {empty}
      </p>
    );
  }
  const shown = filters ? filterRows(rows, filter, Date.now()) : rows;
  const tick = (executionId: string, on: boolean) =>
    setTicked((current) =>
      on
        ? [...current.filter((id) => id !== executionId), executionId].slice(-2)
        : current.filter((id) => id !== executionId),
    );
  return (
    <>
      {filters && (
        <>
          <FilterBar rows={rows} filter={filter} onChange={setFilter} />
          <div className="row">
            <span className="muted" data-testid="filter-count">
              {shown.length} of {rows.length} executions
            </span>
            <button
              type="button"
              data-testid="compare-ticked"
              disabled={ticked.length !== 2}
              title="Tick two executions to compare their root threads"
              onClick={() => navigate('compare', ticked[0]!, ticked[1]!)}
            >
              Compare the two ticked
            </button>
          </div>
        </>
      )}
      <table data-testid="executions">
        <thead>
          <tr>
            {filters && <th className="fit" />}
            <th>Execution</th>
            <th>Status</th>
            <th>Workflow</th>
            <th>Started</th>
            <th>Duration</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((row) => (
            <tr key={row.executionId} data-testid="execution-row" data-execution={row.executionId}>
              {filters && (
                <td className="fit">
                  <input
                    type="checkbox"
                    aria-label={`compare ${row.executionId}`}
                    data-testid="compare-tick"
                    checked={ticked.includes(row.executionId)}
                    onChange={(event) => tick(row.executionId, event.target.checked)}
                  />
                </td>
              )}
              <td>
                <a href={`#/executions/${encodeURIComponent(row.executionId)}`}>
                  {row.executionId.slice(0, 8)}
                </a>
              </td>
              <td>
                <StatusBadge status={row.status} />
              </td>
              <td>{row.workflowId}</td>
              <td>{formatTime(row.startTime)}</td>
              <td>{formatDuration(row.durationMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length === 0 && (
        <p className="muted" data-testid="no-matching-executions">
          No execution matches.
        </p>
      )}
    </>
  );
}

function WorkflowPage({ workflowId }: { workflowId: string }) {
  const [detail, setDetail] = useState<WorkflowDetail>();
  const [executions, setExecutions] = useState<ExecutionRow[]>();
  const [listFailed, setListFailed] = useState(false);
  const [input, setInput] = useState('{}');
  const [error, setError] = useState<string>();
  const [starting, setStarting] = useState(false);
  const [reads] = useState(newestReads);
  const refresh = useCallback(() => {
    const newest = reads();
    api.executions().then(
      (rows) => {
        if (!newest()) return;
        setExecutions(rows.filter((row) => row.workflowId === workflowId));
        setListFailed(false);
      },
      () => newest() && setListFailed(true),
    );
  }, [reads, workflowId]);
  useEffect(() => {
    api.workflow(workflowId).then(setDetail, (e: Error) => setError(e.message));
    refresh();
    // Runs started or ended elsewhere (another tab, the API) show up as they do on the home page.
    return subscribe(undefined, (type) => {
      if (type === 'execution') refresh();
    });
  }, [workflowId, refresh]);
  const start = async () => {
    setError(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(input);
    } catch (e) {
      setError(`the input is not JSON: ${(e as Error).message}`);
      return;
    }
    setStarting(true);
    try {
      const started = await api.start(workflowId, parsed);
      navigate('executions', started.executionId);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setStarting(false);
    }
  };
  return (
    <>
      <h1>{workflowId}</h1>
      {detail?.description && <p className="muted">{detail.description}</p>}
      {detail && !detail.valid && (
        <div className="panel error">
          {detail.errors.map((e) => (
            <div key={`${e.code}${e.path ?? ''}${e.message}`}>
              {e.code} {e.path ? `at ${e.path}` : ''}: {e.message}
            </div>
          ))}
        </div>
      )}
      <div className="columns">
        <div>{detail?.graph && <Graph graph={detail.graph} />}</div>
        <div>
          <div className="panel">
            <h2>Start a run</h2>
            <label htmlFor="run-input" className="muted">
              Input (a JSON object)
            </label>
            <textarea
              id="run-input"
              data-testid="run-input"
              rows={8}
              value={input}
              onChange={(event) => setInput(event.target.value)}
            />
            <div className="row">
              <button
                type="button"
                className="primary"
                data-testid="start-run"
                disabled={starting || !detail?.valid}
                onClick={start}
              >
                Start
              </button>
              {error && <span className="error">{error}</span>}
            </div>
          </div>
          <h2>Executions of this workflow</h2>
          {/* On the workflow's own page, "start one from a workflow" would send the user elsewhere. */}
          <ExecutionTable
            rows={executions}
            failed={listFailed}
            empty="No executions of this workflow yet: Start runs one."
          />
        </div>
      </div>
    </>
  );
}
