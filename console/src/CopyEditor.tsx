/**
 * "Copy from here": before the copy is made, its variables (as they were before the step) and its
 * input can be edited, and the node's configuration is shown. Only what was changed is sent, as the
 * copy API's `set` and `input` (`stepthread copy --set/--input`); the server checks each edit against
 * the workflow and refuses a wrong one with its code, and no copy is made.
 */
import { useEffect, useState } from 'react';
import { api, type CopyRequest, type ThreadHead } from './api.ts';
import { navigate } from './ui.tsx';

interface Scopes {
  global?: Record<string, unknown>;
  thread?: Record<string, unknown>;
}

/** Thread and global variables by name (a copy sets those; a thread variable wins over a global one). */
function editableVariables(variables: unknown): [string, unknown][] {
  const scopes = (variables ?? {}) as Scopes;
  const byName = new Map<string, unknown>(Object.entries(scopes.global ?? {}));
  for (const [name, value] of Object.entries(scopes.thread ?? {})) byName.set(name, value);
  return [...byName.entries()];
}

const asText = (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';

export function CopyEditor({
  threadId,
  step,
  nodeId,
  nodeConfig,
  onCopied,
  onClose,
}: {
  threadId: string;
  step: number;
  nodeId: string;
  /** The node's definition as the run had it (shown, not editable here). */
  nodeConfig: unknown;
  onCopied: (copy: ThreadHead, fromStep: number) => void;
  onClose: () => void;
}) {
  const [variables, setVariables] = useState<[string, unknown][]>();
  const [input, setInput] = useState<unknown>();
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [inputText, setInputText] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let current = true;
    // The variables as the step found them: after the step before it.
    Promise.all([api.conversation(threadId, step - 1), api.thread(threadId)]).then(
      ([before, head]) => {
        if (!current) return;
        const editable = editableVariables(before.variables);
        setVariables(editable);
        setTexts(Object.fromEntries(editable.map(([name, value]) => [name, asText(value)])));
        setInput(head.input);
        setInputText(asText(head.input));
      },
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [threadId, step]);

  /** The request: only the variables and input that were changed, parsed as JSON. */
  const request = (): CopyRequest | string => {
    const set: Record<string, unknown> = {};
    for (const [name, value] of variables ?? []) {
      const text = texts[name] ?? asText(value);
      if (text === asText(value)) continue;
      try {
        set[name] = JSON.parse(text);
      } catch {
        return `variable ${name}: not JSON (a text is written in quotes: "like this")`;
      }
    }
    let newInput: Record<string, unknown> | undefined;
    if (inputText !== asText(input)) {
      try {
        newInput = JSON.parse(inputText) as Record<string, unknown>;
      } catch {
        return 'the input is not JSON';
      }
    }
    return {
      fromStep: step,
      ...(Object.keys(set).length > 0 ? { set } : {}),
      ...(newInput === undefined ? {} : { input: newInput }),
    };
  };

  const copy = async (andRun: boolean) => {
    const body = request();
    if (typeof body === 'string') {
      setError(body);
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const made = await api.copy(threadId, body);
      if (andRun) {
        const started = await api.run(made.threadId);
        navigate('executions', started.executionId);
        return;
      }
      onCopied(made, step);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="panel copy-editor" data-testid="copy-editor">
      <h2>
        Copy from step {step} ({nodeId})
      </h2>
      <p className="muted">
        A new thread as this one was before step {step}, which runs {nodeId} first. Change what it starts
        with, then copy it (and run it).
      </p>
      {variables === undefined && !error && <p className="muted">Loading…</p>}
      {variables !== undefined && (
        <>
          <h3>Variables</h3>
          {variables.length === 0 && <p className="muted">No thread or global variables.</p>}
          {variables.map(([name]) => (
            <div key={name} className="edit-field">
              <label htmlFor={`copy-var-${name}`}>
                <code>{name}</code>
              </label>
              <textarea
                id={`copy-var-${name}`}
                data-testid={`copy-var-${name}`}
                rows={Math.min(6, (texts[name] ?? '').split('\n').length)}
                value={texts[name] ?? ''}
                onChange={(event) => {
                  setError(undefined);
                  setTexts({ ...texts, [name]: event.target.value });
                }}
              />
            </div>
          ))}
          <h3>Input</h3>
          <textarea
            aria-label="the copy's input (a JSON object)"
            data-testid="copy-input"
            rows={Math.min(8, inputText.split('\n').length)}
            value={inputText}
            onChange={(event) => {
              setError(undefined);
              setInputText(event.target.value);
            }}
          />
          <h3>Node {nodeId}</h3>
          <p className="muted">Its configuration (read-only: the copy API does not edit it yet).</p>
          <pre data-testid="copy-node-config">{JSON.stringify(nodeConfig ?? null, null, 2)}</pre>
        </>
      )}
      {error && (
        <p className="error" data-testid="copy-error">
          {error}
        </p>
      )}
      <div className="row">
        <button
          type="button"
          data-testid="copy-confirm"
          disabled={busy || variables === undefined}
          onClick={() => copy(false)}
        >
          Copy
        </button>
        <button
          type="button"
          className="primary"
          data-testid="copy-and-run"
          disabled={busy || variables === undefined}
          onClick={() => copy(true)}
        >
          Copy and run
        </button>
        <button type="button" data-testid="copy-cancel" onClick={onClose}>
          Cancel
        </button>
      </div>
    </div>
  );
}
