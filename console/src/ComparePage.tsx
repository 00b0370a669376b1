/**
 * Two threads side by side, as `stepthread diff` compares them: where they part, their steps after
 * what they share aligned by node and occurrence (engine/thread/step-alignment.ts, the diff's own
 * alignment) with each differing pair marked, the variables and final outputs that differ, their
 * conversations message by message, and each pair of fork children with a link to compare them.
 */
import { useEffect, useState } from 'react';
import { alignByOccurrence, partingOf } from '../../engine/thread/step-alignment.ts';
import { api, type ComparedStep, type Comparison, formatDuration, formatUsd, type Message } from './api.ts';
import { navigate, StatusBadge } from './ui.tsx';

export function ComparePage({ a, b }: { a?: string; b?: string }) {
  const [comparison, setComparison] = useState<Comparison>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!a || !b) return;
    let current = true;
    setComparison(undefined);
    setError(undefined);
    api.compare(a, b).then(
      (next) => current && setComparison(next),
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [a, b]);
  return (
    <>
      <h1>Compare</h1>
      <ComparePicker a={a} b={b} />
      {error && (
        <p className="error" data-testid="compare-error">
          {error}
        </p>
      )}
      {a && b && !comparison && !error && <p className="muted">Comparing…</p>}
      {comparison && <ComparisonView comparison={comparison} />}
    </>
  );
}

/** Two ids (threads, or executions for their root threads) to compare. */
function ComparePicker({ a, b }: { a?: string; b?: string }) {
  const [left, setLeft] = useState(a ?? '');
  const [right, setRight] = useState(b ?? '');
  return (
    <form
      className="row"
      onSubmit={(event) => {
        event.preventDefault();
        if (left.trim() && right.trim()) navigate('compare', left.trim(), right.trim());
      }}
    >
      <input
        aria-label="thread or execution a"
        placeholder="thread or execution id (a)"
        data-testid="compare-a"
        value={left}
        onChange={(event) => setLeft(event.target.value)}
      />
      <input
        aria-label="thread or execution b"
        placeholder="thread or execution id (b)"
        data-testid="compare-b"
        value={right}
        onChange={(event) => setRight(event.target.value)}
      />
      <button type="submit">Compare</button>
    </form>
  );
}

type Side = Comparison['diff']['a'];

function SideHeader({ label, side }: { label: string; side: Side }) {
  return (
    <div className="panel" data-testid={`compare-side-${label}`}>
      <h2>
        {label}: <StatusBadge status={side.status} />
      </h2>
      <div className="muted">
        thread {side.threadId}
        {side.executionId && (
          <>
            {' · '}
            <a href={`#/executions/${encodeURIComponent(side.executionId)}`}>execution</a>
          </>
        )}
      </div>
      <div>
        {side.steps} steps · {side.cost.tokens} tokens · {formatUsd(side.cost.costUsd)}
        {side.durationMs !== undefined && ` · ${formatDuration(side.durationMs)}`}
      </div>
      {side.copiedFrom && (
        <div className="muted">
          a copy of {side.copiedFrom} at step {side.copiedAtStep}
        </div>
      )}
    </div>
  );
}

const preview = (value: unknown) => (value === undefined ? '' : JSON.stringify(value, null, 2));

function StepCell({ step }: { step: ComparedStep | undefined }) {
  if (step === undefined) return <td className="muted">(no such step)</td>;
  return (
    <td>
      <div>
        <span className="muted">step {step.position}</span> <StatusBadge status={step.status} />{' '}
        <span className="muted">{formatDuration(step.durationMs)}</span>
      </div>
      {step.error ? (
        <span className="error">
          {step.error.code}: {step.error.message}
        </span>
      ) : (
        step.output !== undefined && <pre className="wrap">{preview(step.output)}</pre>
      )}
    </td>
  );
}

function ComparisonView({ comparison }: { comparison: Comparison }) {
  const { diff, a, b } = comparison;
  const aligned = alignByOccurrence(a.steps, b.steps);
  const parting = partingOf(a.steps, b.steps);
  const byKey = (steps: readonly ComparedStep[]) =>
    new Map(steps.map((step) => [`${step.threadId}#${step.step}`, step]));
  const [stepsA, stepsB] = [byKey(a.steps), byKey(b.steps)];
  const how =
    diff.partsAt &&
    {
      output: `${diff.partsAt.a?.nodeId} gave another output`,
      path: `a ran ${diff.partsAt.a?.nodeId}, b ran ${diff.partsAt.b?.nodeId}`,
      onlyA: `a ran ${diff.partsAt.a?.nodeId}, b had ended`,
      onlyB: `b ran ${diff.partsAt.b?.nodeId}, a had ended`,
    }[diff.partsAt.reason];
  return (
    <div data-testid="comparison">
      <div className="columns">
        <SideHeader label="a" side={diff.a} />
        <SideHeader label="b" side={diff.b} />
      </div>
      <div className="panel" data-testid="compare-summary">
        {diff.sharedSteps > 0 && (
          <div>
            The first {diff.sharedSteps} step(s) are the same records on both (the copy point): compared from
            step {diff.sharedSteps + 1}.
          </div>
        )}
        <div data-testid="compare-parts">
          {diff.partsAt ? `They part at step ${diff.partsAt.position}: ${how}.` : 'No step differs.'}
        </div>
        {diff.variables.length > 0 && (
          <table data-testid="compare-variables">
            <thead>
              <tr>
                <th className="fit">Variable at the end</th>
                <th>a</th>
                <th>b</th>
              </tr>
            </thead>
            <tbody>
              {diff.variables.map((variable) => (
                <tr key={`${variable.scope}.${variable.name}`} className="differs">
                  <td className="fit">
                    <code>{variable.name}</code> <span className="muted">{variable.scope}</span>
                  </td>
                  <td>
                    <pre className="wrap">{'a' in variable ? preview(variable.a) : '(none)'}</pre>
                  </td>
                  <td>
                    <pre className="wrap">{'b' in variable ? preview(variable.b) : '(none)'}</pre>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <div data-testid="compare-final" data-same={diff.final.same}>
          Final output: {diff.final.same ? 'the same' : 'differs'}
        </div>
      </div>
      <div className="panel">
        <h2>Steps</h2>
        <table data-testid="compare-steps" className="compare">
          <thead>
            <tr>
              <th className="fit">Node</th>
              <th>a</th>
              <th>b</th>
            </tr>
          </thead>
          <tbody>
            {aligned.map((row) => {
              const differs = row.a?.hash !== row.b?.hash;
              const parts =
                parting !== undefined &&
                ((row.a !== undefined && row.a === parting.a) ||
                  (row.b !== undefined && row.b === parting.b));
              return (
                <tr
                  key={`${row.nodeId}#${row.occurrence}`}
                  data-testid="compare-step"
                  data-node={row.nodeId}
                  data-differs={differs}
                  data-parting={parts}
                  className={`${differs ? 'differs' : ''}${parts ? ' parting' : ''}`}
                >
                  <td className="fit">
                    {row.nodeId}
                    {row.occurrence > 1 && <span className="muted"> #{row.occurrence}</span>}
                    {parts && <div className="parting-mark">they part here</div>}
                  </td>
                  <StepCell step={row.a && stepsA.get(`${row.a.threadId}#${row.a.step}`)} />
                  <StepCell step={row.b && stepsB.get(`${row.b.threadId}#${row.b.step}`)} />
                </tr>
              );
            })}
          </tbody>
        </table>
        {(a.stepsNotShown > 0 || b.stepsNotShown > 0) && (
          <p className="muted">
            Steps not listed: a {a.stepsNotShown}, b {b.stepsNotShown} (stepthread diff compares them all).
          </p>
        )}
      </div>
      <div className="panel">
        <h2>Conversations</h2>
        <ConversationPair a={a.messages} b={b.messages} />
      </div>
      {diff.forks.length > 0 && (
        <div className="panel" data-testid="compare-forks">
          <h2>Fork children</h2>
          <ul>
            {diff.forks.map((fork) => (
              <li
                key={`${fork.forkPathId}#${fork.occurrence}`}
                data-testid={`compare-fork-${fork.forkPathId}`}
              >
                path {fork.forkPathId}
                {fork.occurrence > 1 ? ` #${fork.occurrence}` : ''}:{' '}
                {fork.a && fork.b ? (
                  <>
                    {fork.same ? 'the same' : 'differ'} ·{' '}
                    <a href={`#/compare/${encodeURIComponent(fork.a)}/${encodeURIComponent(fork.b)}`}>
                      compare
                    </a>
                  </>
                ) : (
                  `only ${fork.a ? 'a' : 'b'} has it`
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

const sameMessage = (x: Message | undefined, y: Message | undefined) =>
  x !== undefined &&
  y !== undefined &&
  x.role === y.role &&
  x.content === y.content &&
  JSON.stringify(x.toolCalls ?? []) === JSON.stringify(y.toolCalls ?? []);

function MessageCell({ message }: { message: Message | undefined }) {
  if (message === undefined) return <td className="muted">(none)</td>;
  return (
    <td>
      <div className={`msg msg-${message.role}`}>
        <div className="role">{message.role}</div>
        {message.content}
        {(message.toolCalls ?? []).map((call) => (
          <div key={call.id} className="muted">
            → {call.name}({JSON.stringify(call.arguments)})
          </div>
        ))}
      </div>
    </td>
  );
}

/** Both conversations message by message, each differing pair marked. */
function ConversationPair({ a, b }: { a: readonly Message[]; b: readonly Message[] }) {
  const rows = Array.from({ length: Math.max(a.length, b.length) }, (_, index) => index);
  return (
    <table data-testid="compare-conversation" className="compare">
      <tbody>
        {rows.map((index) => {
          const differs = !sameMessage(a[index], b[index]);
          return (
            <tr
              key={index}
              data-testid="compare-message"
              data-differs={differs}
              className={differs ? 'differs' : ''}
            >
              <MessageCell message={a[index]} />
              <MessageCell message={b[index]} />
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
