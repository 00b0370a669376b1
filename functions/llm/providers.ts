/** The provider for a profile: scripted (offline default), openai (any compatible server), bedrock (Converse). */
import type { Profile } from '../../engine/model/schema.ts';
import { createBedrockProvider } from './bedrock.ts';
import { createOpenAiProvider } from './openai.ts';
import type { LlmProvider } from './provider.ts';
import { createScriptedProvider } from './scripted.ts';

export function providerForProfile(profile: Profile): LlmProvider {
  switch (profile.provider) {
    case 'scripted':
      return createScriptedProvider(profile);
    case 'openai':
      return createOpenAiProvider(profile);
    case 'bedrock':
      return createBedrockProvider(profile);
  }
}
