/**
 * "Copy from here": before the copy is made, its variables (as they were before the step), its input
 * and the node's configuration can be edited. Only what was changed is sent, as the copy API's `set`,
 * `input` and `nodeConfig` (`stepthread copy --set/--input/--node-config`); the server checks each
 * edit against the workflow and refuses a wrong one with its code(s), and no copy is made.
 */
import { useEffect, useState } from 'react';
import {
  ApiFailure,
  api,
  type CodedError,
  type CopyRequest,
  type RecordedEdit,
  type ThreadHead,
} from './api.ts';
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

/**
 * The node's config as the thread runs it: the workflow's, with the node config edits the thread
 * runs with (a copy of an edited copy inherits them) applied in order.
 */
function configAsRun(node: unknown, nodeId: string, workflowEdits: RecordedEdit[] | undefined) {
  const config = { ...((node as { config?: Record<string, unknown> } | undefined)?.config ?? {}) };
  for (const edit of workflowEdits ?? []) {
    if (edit.kind === 'nodeConfig' && edit.nodeId === nodeId) config[edit.key] = edit.value;
  }
  return config;
}

const asText = (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';
/** A text config value (a prompt, code) is edited as the text itself; any other as JSON. */
const configText = (value: unknown) => (typeof value === 'string' ? value : asText(value));

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
  /** The node's definition in the workflow (its config is edited here). */
  nodeConfig: unknown;
  onCopied: (copy: ThreadHead, fromStep: number) => void;
  onClose: () => void;
}) {
  const [variables, setVariables] = useState<[string, unknown][]>();
  const [input, setInput] = useState<unknown>();
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [inputText, setInputText] = useState('');
  const [config, setConfig] = useState<Record<string, unknown>>({});
  const [configTexts, setConfigTexts] = useState<Record<string, string>>({});
  /** A config key the node does not set yet, and its value (JSON). */
  const [newKey, setNewKey] = useState('');
  const [newKeyText, setNewKeyText] = useState('');
  /** A refusal: the client's own (a field is not JSON) or every coded problem the server gave. */
  const [error, setError] = useState<string | CodedError[]>();
  const [busy, setBusy] = useState(false);

  // Read once per step: the page's refreshes hand in a new `nodeConfig` object, which must not undo
  // the edits being typed.
  // biome-ignore lint/correctness/useExhaustiveDependencies: see above
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
        const asRun = configAsRun(nodeConfig, nodeId, head.metadata.workflowEdits);
        setConfig(asRun);
        setConfigTexts(
          Object.fromEntries(Object.entries(asRun).map(([key, value]) => [key, configText(value)])),
        );
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
    const edited: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(config)) {
      const text = configTexts[key] ?? configText(value);
      if (text === configText(value)) continue;
      if (typeof value === 'string') {
        edited[key] = text;
        continue;
      }
      try {
        edited[key] = JSON.parse(text);
      } catch {
        return `${nodeId} config ${key}: not JSON`;
      }
    }
    if (newKey.trim() !== '') {
      try {
        edited[newKey.trim()] = JSON.parse(newKeyText);
      } catch {
        return `${nodeId} config ${newKey.trim()}: not JSON (a text is written in quotes: "like this")`;
      }
    }
    return {
      fromStep: step,
      ...(Object.keys(set).length > 0 ? { set } : {}),
      ...(newInput === undefined ? {} : { input: newInput }),
      ...(Object.keys(edited).length > 0 ? { nodeConfig: { [nodeId]: edited } } : {}),
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
      setError(e instanceof ApiFailure ? e.errors : (e as Error).message);
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
          <p className="muted">
            Its configuration as this thread runs it; the copy runs with what is changed here (a text as it
            is, any other value as JSON).
          </p>
          {Object.keys(config).length === 0 && <p className="muted">It sets no config keys.</p>}
          {Object.entries(config).map(([key, value]) => (
            <div key={key} className="edit-field">
              <label htmlFor={`copy-config-${key}`}>
                <code>{key}</code>{' '}
                <span className="muted">{typeof value === 'string' ? 'text' : 'JSON'}</span>
              </label>
              <textarea
                id={`copy-config-${key}`}
                data-testid={`copy-config-${key}`}
                rows={Math.min(
                  key === 'code' ? 12 : 6,
                  Math.max(2, (configTexts[key] ?? '').split('\n').length),
                )}
                value={configTexts[key] ?? ''}
                onChange={(event) => {
                  setError(undefined);
                  setConfigTexts({ ...configTexts, [key]: event.target.value });
                }}
              />
            </div>
          ))}
          <div className="edit-field row">
            <input
              aria-label="another config key"
              data-testid="copy-config-new-key"
              placeholder="another config key"
              value={newKey}
              onChange={(event) => {
                setError(undefined);
                setNewKey(event.target.value);
              }}
            />
            <input
              aria-label="its value (JSON)"
              data-testid="copy-config-new-value"
              placeholder="its value (JSON)"
              value={newKeyText}
              onChange={(event) => {
                setError(undefined);
                setNewKeyText(event.target.value);
              }}
            />
          </div>
        </>
      )}
      {typeof error === 'string' && (
        <p className="error" data-testid="copy-error">
          {error}
        </p>
      )}
      {Array.isArray(error) && (
        <ul className="error" data-testid="copy-error">
          {error.map((problem, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the problems as the server listed them
            <li key={index} data-code={problem.code}>
              <code>{problem.code}</code>: {problem.message}
            </li>
          ))}
        </ul>
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
