/**
 * What a node read when it ran, in its panel: for one of its runs on the thread (the latest by
 * default), its prompt as rendered, a TOOL node's arguments, a CODE node's inputs (whatever its
 * templates and expressions gave over the state before its step), the tool calls an LLM node made
 * with their arguments and results, and each variable it read with its value then.
 */
import { useEffect, useState } from 'react';
import { api, type StepInput } from './api.ts';

export function NodeInput({
  threadId,
  nodeId,
  version,
}: {
  threadId: string;
  nodeId: string;
  version: number;
}) {
  const [runs, setRuns] = useState<number[]>();
  const [chosen, setChosen] = useState<number>();
  const [input, setInput] = useState<StepInput>();
  const [error, setError] = useState<string>();

  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the page's refresh signal
  useEffect(() => {
    let current = true;
    // Every step: the node may have run early in a long thread.
    api.steps(threadId, 1).then(
      (next) => current && setRuns(next.steps.filter((row) => row.nodeId === nodeId).map((row) => row.step)),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, nodeId, version]);

  const step = chosen ?? runs?.at(-1);
  useEffect(() => {
    if (step === undefined) return;
    let current = true;
    setError(undefined);
    api.stepInput(threadId, step).then(
      (next) => current && setInput(next),
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [threadId, step]);

  if (runs === undefined || runs.length === 0) return null;
  const shown = input?.step === step && input?.threadId === threadId ? input : undefined;
  return (
    <div data-testid="node-input" data-step={step} style={{ margin: '0.5rem 0' }}>
      <h3>
        Its input in step{' '}
        {runs.length > 1 ? (
          <select
            aria-label="which run of the node"
            data-testid="node-input-run"
            value={step}
            onChange={(event) => setChosen(Number(event.target.value))}
          >
            {runs.map((run) => (
              <option key={run} value={run}>
                {run}
              </option>
            ))}
          </select>
        ) : (
          step
        )}
      </h3>
      {error && <p className="error">{error}</p>}
      {shown && !shown.definitionKnown && (
        <p className="muted">The workflow it ran is not known here: only its tool calls can be shown.</p>
      )}
      {shown && <RenderedFields input={shown} />}
    </div>
  );
}

/** A value as it is shown: text as text (a prompt keeps its lines), anything else as JSON. */
function Shown({ value, testId }: { value: unknown; testId?: string }) {
  return (
    <pre data-testid={testId} className="wrap">
      {typeof value === 'string' ? value : JSON.stringify(value, null, 2)}
    </pre>
  );
}

function RenderedFields({ input }: { input: StepInput }) {
  const rendered = Object.entries(input.rendered);
  const reads = Object.entries(input.reads);
  return (
    <>
      {rendered.map(([field, value]) => (
        <div key={field} data-testid={`node-input-${field}`}>
          <p className="muted">{FIELD_NAMES[field] ?? field}:</p>
          <Shown value={value} />
        </div>
      ))}
      {Object.entries(input.problems ?? {}).map(([field, why]) => (
        <p key={field} className="error">
          {field} did not render: {why}
        </p>
      ))}
      {input.toolCalls.length > 0 && (
        <div data-testid="node-input-tool-calls">
          <p className="muted">Tool calls:</p>
          {input.toolCalls.map((call) => (
            <div key={call.id} data-testid="node-input-tool-call" data-tool={call.name}>
              <code>
                {call.name}({JSON.stringify(call.arguments)})
              </code>
              {call.result !== undefined && <span className="muted"> → {call.result}</span>}
            </div>
          ))}
        </div>
      )}
      {reads.length > 0 && (
        <table data-testid="node-input-reads" className="reads">
          <thead>
            <tr>
              <th className="fit">It read</th>
              <th>Value then</th>
            </tr>
          </thead>
          <tbody>
            {reads.map(([name, value]) => (
              <tr key={name} data-testid={`node-input-read-${name}`}>
                <td className="fit">
                  <code>{name}</code>
                </td>
                <td>
                  <Shown value={value} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

const FIELD_NAMES: Record<string, string> = {
  prompt: 'Prompt, as rendered',
  systemPrompt: 'System prompt, as rendered',
  arguments: 'Arguments, as rendered',
  inputs: 'Inputs, as evaluated',
  showMessage: 'Message, as rendered',
  expression: 'Value of its expression',
  routes: 'Conditions, as evaluated',
  output: 'Output, as rendered',
};
