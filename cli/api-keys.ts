/**
 * API keys a local run's model calls will read from the environment and that it lacks. `run` and
 * `resume` refuse such a run before anything runs, as an SDK client refuses to be built without its
 * key: otherwise the run would fail with LLM_MISSING_API_KEY at its first model call, after every step
 * before it (and a copy or resume would be needed to go on once the key is set).
 */

import type { CodedError } from '../engine/errors.ts';
import { buildGraph } from '../engine/graph/build.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { apiKeySource } from '../functions/llm/secrets.ts';
import { type CliIo, EXIT } from './io.ts';
import { printErrors } from './local-session.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** One error per unset variable, naming the LLM nodes (and profiles) that read it. */
export function missingApiKeys(workflow: Workflow, env: Env): CodedError[] {
  const graph = buildGraph(workflow);
  const readers = new Map<string, { nodes: string[]; profiles: Set<string> }>();
  for (const node of graph.nodes.values()) {
    if (node.type !== 'LLM') continue;
    const profileId = node.config.profileId ?? 'default';
    const profile = graph.profiles[profileId];
    if (profile?.provider !== 'openai') continue;
    const source = apiKeySource(profile, env);
    if (source.kind !== 'env' || (env[source.name]?.trim() ?? '') !== '') continue;
    const entry = readers.get(source.name) ?? { nodes: [], profiles: new Set<string>() };
    entry.nodes.push(node.id);
    entry.profiles.add(profileId);
    readers.set(source.name, entry);
  }
  return [...readers].map(([variable, { nodes, profiles }]) => ({
    code: 'LLM_MISSING_API_KEY',
    message:
      `the environment variable ${variable} is not set, and ${nodes.length === 1 ? 'node' : 'nodes'} ` +
      `${nodes.join(', ')} (${profiles.size === 1 ? 'profile' : 'profiles'} ${[...profiles].join(', ')}, openai) ` +
      `${nodes.length === 1 ? 'reads its' : 'read their'} API key from it: set it (export ${variable}=…), ` +
      `or name another variable with the profile's apiKeyEnv`,
  }));
}

/** Prints the refusal and returns the exit code when keys are missing; undefined when none is. */
export function refuseMissingApiKeys(workflow: Workflow, io: CliIo): number | undefined {
  const missing = missingApiKeys(workflow, io.env ?? process.env);
  if (missing.length === 0) return undefined;
  printErrors(io, 'the run needs an API key the environment lacks, so nothing ran', missing);
  return EXIT.invalid;
}
