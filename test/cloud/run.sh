#!/usr/bin/env bash
# npm run test:cloud: the deployed stack, proved without AWS. Synthesizes the app over every example and
# test workflow, lints every template with cfn-lint, then runs cloud.suite.ts and stack.suite.ts against
# the template stood up in moto (each SDK call checked against its caller's policy as synthesized), and
# last permissions.suite.ts over the calls both made. Skipped, with a message, where python3, moto or
# cfn-lint is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v python3 >/dev/null || ! python3 -c 'import moto' 2>/dev/null || ! command -v cfn-lint >/dev/null; then
  echo "test:cloud SKIPPED: needs python3 with moto 5 and cfn-lint on PATH (pip install 'moto[server]==5.*' cfn-lint)."
  exit 0
fi

WORK=.stepthread/cloud
STACK=StepthreadCloud
export STEPTHREAD_CLOUD_WORKFLOWS="$PWD/$WORK/workflows"
export STEPTHREAD_CLOUD_ASSEMBLY="$PWD/$WORK/cdk.out"
export STEPTHREAD_CLOUD_STACK=$STACK

npx tsx test/cloud/workflows.ts "$STEPTHREAD_CLOUD_WORKFLOWS"
rm -rf "$STEPTHREAD_CLOUD_ASSEMBLY"
# Streaming off: moto has no AppSync Events API to stand the stack's up in (test/infra/streaming.test.ts
# synthesizes it, with cdk-nag and cfn-lint).
npx cdk synth --quiet -o "$STEPTHREAD_CLOUD_ASSEMBLY" \
  -c "stepthread:workflowsDir=$STEPTHREAD_CLOUD_WORKFLOWS" -c "stepthread:stackName=$STACK" \
  -c "stepthread:streaming=off" -c "stepthread:retentionDays=30"

# Errors fail the suite; warnings are printed. Rules ignored, each with its reason:
#   W3005  a DependsOn also implied by a GetAtt: CDK adds it so a role's policy exists before the
#          function or state machine using the role; redundant, never wrong.
#   W3045  AccessControl on the access-log bucket: CDK grants S3 log delivery with the LogDeliveryWrite
#          ACL there (only the log bucket; the conversation bucket enforces bucket-owner ownership).
IGNORED=(W3005 W3045)
templates=("$STEPTHREAD_CLOUD_ASSEMBLY"/*.template.json)
echo "cfn-lint: ${#templates[@]} template(s), ignoring ${IGNORED[*]}"
cfn-lint --non-zero-exit-code error --ignore-checks "${IGNORED[@]}" -- "${templates[@]}"

rm -rf "$WORK/calls"
npx vitest run --config test/cloud/vitest.config.ts
STEPTHREAD_CLOUD_PERMISSIONS=1 npx vitest run --config test/cloud/vitest.config.ts test/cloud/permissions.suite.ts
