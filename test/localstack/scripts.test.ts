/**
 * The LocalStack path as documented (the suite itself needs LocalStack and is opt-in): `deploy:local`
 * uses the project's own cdklocal, which drives the project's aws-cdk, with the S3 endpoint cdklocal 3
 * needs for asset uploads; docs/deploy.md names LocalStack's arm64 setting.
 */
import { readFileSync } from 'node:fs';
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
});
