/**
 * The LocalStack path as documented (the suite itself needs LocalStack and is opt-in): `deploy:local`
 * uses the project's own cdklocal, which drives the project's aws-cdk, with the S3 endpoint cdklocal 3
 * needs for asset uploads; docs/deploy.md names LocalStack's arm64 setting.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};
const deployDoc = readFileSync('docs/deploy.md', 'utf8');

describe('the LocalStack deploy path', () => {
  it('deploys with the project cdklocal and both endpoints', () => {
    expect(pkg.devDependencies['aws-cdk-local']).toMatch(/^\^3\./);
    expect(pkg.devDependencies['aws-cdk']).toMatch(/^\^2\./);
    const script = pkg.scripts['deploy:local']!;
    expect(script).toContain('AWS_ENDPOINT_URL=$' + '{AWS_ENDPOINT_URL:-http://localhost:4566}');
    expect(script).toContain('AWS_ENDPOINT_URL_S3=$' + '{AWS_ENDPOINT_URL_S3:-');
    expect(script).toMatch(/cdklocal bootstrap && cdklocal deploy --all/);
  });

  it('documents what LocalStack needs', () => {
    const start = deployDoc.indexOf('\n## LocalStack\n');
    expect(start).toBeGreaterThan(0);
    const section = deployDoc.slice(start, deployDoc.indexOf('\n## ', start + 1));
    expect(section).toContain('LAMBDA_IGNORE_ARCHITECTURE=1');
    expect(section).toContain('AWS_ENDPOINT_URL_S3');
    expect(section).not.toContain('npm install -g aws-cdk-local      #');
  });

  it('documents that cdklocal drops AWS_REGION and AWS_PROFILE unless AWS_ENVAR_ALLOWLIST names them', () => {
    // cdklocal's own environment handling (aws-cdk-local 3), applied to a shell that names a region and profile.
    const { configureEnvironment } = createRequire(import.meta.url)('aws-cdk-local/src/index.js') as {
      configureEnvironment: (env: Record<string, string>, allowList: string) => void;
    };
    const shell = () => ({
      AWS_REGION: 'eu-west-1',
      AWS_PROFILE: 'prod',
      AWS_ENDPOINT_URL: 'http://localhost:4566',
      AWS_ENDPOINT_URL_S3: 'http://s3.localhost.localstack.cloud:4566',
    });
    const plain: Record<string, string> = shell();
    configureEnvironment(plain, '');
    expect(plain).toMatchObject({ AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test' });
    expect(plain.AWS_PROFILE).toBeUndefined();
    const allowed: Record<string, string> = shell();
    configureEnvironment(allowed, 'AWS_REGION,AWS_DEFAULT_REGION');
    expect(allowed.AWS_REGION).toBe('eu-west-1');
    const start = deployDoc.indexOf('\n## LocalStack\n');
    const section = deployDoc.slice(start, deployDoc.indexOf('\n## ', start + 1)).replace(/\s+/g, ' ');
    expect(section).toContain('deploys to `us-east-1`');
    expect(section).toContain('AWS_ENVAR_ALLOWLIST=AWS_REGION,AWS_DEFAULT_REGION');
  });
});
