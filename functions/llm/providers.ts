/** The provider for a profile. Real providers (openai, bedrock) arrive in a later issue. */
import { StepthreadError } from '../../engine/errors.ts';
import type { Profile } from '../../engine/model/schema.ts';
import type { LlmProvider } from './provider.ts';
import { createScriptedProvider } from './scripted.ts';

export function providerForProfile(profile: Profile): LlmProvider {
  switch (profile.provider) {
    case 'scripted':
      return createScriptedProvider(profile);
    case 'openai':
    case 'bedrock':
      throw new StepthreadError(
        'NOT_IMPLEMENTED',
        `the ${profile.provider} provider is not available yet; use a scripted profile`,
      );
  }
}
