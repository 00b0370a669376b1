"""moto in server mode as a second Step Functions interpreter for the deployed stack (npm run test:cloud).

Usage: python3 moto_server.py <port> <bridge-url>

- Step Functions executes the state machines for real (moto's interpreter, a port of LocalStack's).
- Lambda invocations are forwarded to the Node bridge (test/cloud/lambda-bridge.ts) instead of Docker:
  it runs the synthesized bundle (cdk.out/asset.*/index.mjs) of the function and answers with its
  result, or with the error the Lambda runtime would report ({"errorType", "errorMessage"}).
- DynamoDB, S3 and EventBridge are moto's own; the bundles reach them through AWS_ENDPOINT_URL.
Prints "ready <port>" once it accepts requests.
"""

import copy
import datetime
import json
import os
import sys
import types
import urllib.request

port = int(sys.argv[1])
bridge_url = sys.argv[2]
# moto's Step Functions calls Lambda through a boto client aimed at MOTO_PORT (settings.moto_server_port).
os.environ["MOTO_PORT"] = str(port)

from moto.awslambda.models import LambdaFunction  # noqa: E402
from moto.core.config import default_user_config  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402
from moto.stepfunctions.parser import models as sfn_parser_models  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (  # noqa: E402
    StateTaskServiceSfn,
)

default_user_config["stepfunctions"]["execute_state_machine"] = True


def invoke_through_bridge(self, event=None):
    """Replaces LambdaFunction._invoke_lambda (Docker): returns (payload, errored, logs)."""
    body = json.dumps(
        {
            "functionName": self.function_name,
            "environment": self.environment_vars or {},
            "event": event if event is not None else {},
        }
    ).encode("utf-8")
    request = urllib.request.Request(
        bridge_url, data=body, headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        answer = json.loads(response.read().decode("utf-8"))
    return json.dumps(answer["payload"]), bool(answer["errored"]), answer.get("logs", "")


LambdaFunction._invoke_lambda = invoke_through_bridge

# moto 5.2.1 deep-copies the state machine at StartExecution (so that a later UpdateStateMachine does not
# change running executions). In server mode the copy reaches a running execution's thread lock and
# fails with "cannot pickle '_thread.RLock' object". The suite never updates a state machine, so a
# shallow copy serves the same purpose there.
_real_deepcopy = copy.deepcopy


def deepcopy_or_shallow(value, memo=None):
    try:
        return _real_deepcopy(value, memo)
    except TypeError as error:
        if "pickle" not in str(error):
            raise
        return copy.copy(value)


# Only the Step Functions backend module sees this copy module; every other deepcopy is untouched.
sfn_parser_models.copy = types.SimpleNamespace(deepcopy=deepcopy_or_shallow, copy=copy.copy)

# moto 5.2.1's port of the `states:startExecution` integration (continue-as-new) passes the state's
# Parameters to boto as they are written in ASL (StateMachineArn, Name, Input), where boto wants the API's
# member names (stateMachineArn, ...), and hands boto's response (executionArn, a datetime startDate) to
# the state unconverted; the integration then fails with a KeyError. Map both as Step Functions does: the
# state sends PascalCase and gets back {"ExecutionArn", "StartDate"}.
def sfn_parameters_as_api(self, parameters, boto_service_name=None, service_action_name=None):
    _sfn_normalise_parameters(self, parameters, boto_service_name, service_action_name)
    for key in list(parameters):
        parameters[key[0].lower() + key[1:]] = parameters.pop(key)


def sfn_response_as_states(self, response, boto_service_name=None, service_action_name=None):
    for key in list(response):
        value = response.pop(key)
        if isinstance(value, datetime.datetime):
            value = value.isoformat()
        response[key[0].upper() + key[1:]] = value


_sfn_normalise_parameters = StateTaskServiceSfn._normalise_parameters
StateTaskServiceSfn._normalise_parameters = sfn_parameters_as_api
StateTaskServiceSfn._normalise_response = sfn_response_as_states

# moto 5.2.1 publishes state machine versions (CreateStateMachine/UpdateStateMachine with publish) and
# creates aliases, but cannot start an execution on either: StartExecution on a version ARN fails inside
# moto (its version object lacks the name-idempotency check), on an alias ARN with
# StateMachineDoesNotExist; DescribeExecution and ListExecutions name no version or alias. The stack
# starts every run on its `live` alias (pinned runs), so the suite adds what Step Functions does: a
# qualified ARN runs the version it names (an alias: the version it routes to) as an execution of the
# state machine, listed and described with stateMachineVersionArn (and stateMachineAliasArn). Its
# context's StateMachine.Id is the version's ARN, as in LocalStack's interpreter, which moto's is a port
# of: a continue-as-new StartExecution on `$$.StateMachine.Id` starts the same version.
from moto.stepfunctions.exceptions import ResourceNotFound, StateMachineDoesNotExist  # noqa: E402
from moto.stepfunctions.parser.backend.execution import Execution as ParserExecution  # noqa: E402
from moto.stepfunctions.parser.models import StepFunctionsParserBackend  # noqa: E402
from moto.core.responses import EmptyResult  # noqa: E402
from moto.stepfunctions.responses import StepFunctionResponse  # noqa: E402

_start_unqualified = StepFunctionsParserBackend.start_execution


def start_qualified(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
    parts = state_machine_arn.split(":")
    if len(parts) != 8:
        return _start_unqualified(self, state_machine_arn, name, execution_input, trace_header)
    source = self.describe_state_machine(":".join(parts[:7]))
    qualifier = parts[7]
    alias_arn = None
    if not qualifier.isdigit():
        alias = source.aliases.get(qualifier)
        if alias is None:
            raise ResourceNotFound(f"State Machine Alias Does Not Exist: '{state_machine_arn}'")
        alias_arn = alias.arn
        qualifier = alias.routing_configuration[0]["stateMachineVersionArn"].rsplit(":", 1)[1]
    version = source.versions.get(int(qualifier))
    if version is None:
        raise StateMachineDoesNotExist(f"State Machine Does Not Exist: '{state_machine_arn}'")
    existing = source._handle_name_input_idempotency(name, execution_input)
    if existing is not None:
        return existing
    # The version's definition, under the version's ARN; the execution belongs to the state machine.
    running = copy.copy(source)
    running.definition = version.definition
    running.arn = version.arn
    execution = ParserExecution(
        name=name,
        sm_type=source.sm_type,
        role_arn=version.roleArn,
        exec_arn=f"arn:{self.partition}:states:{self.region_name}:{self.account_id}:execution:{source.name}:{name}",
        account_id=self.account_id,
        region_name=self.region_name,
        state_machine=running,
        start_date=datetime.datetime.now(tz=datetime.timezone.utc),
        cloud_watch_logging_session=None,
        input_data=execution_input if execution_input is not None else "{}",
        trace_header=trace_header,
        activity_store={},
    )
    execution.state_machine_arn = source.arn
    execution.state_machine_version_arn = version.arn
    execution.state_machine_alias_arn = alias_arn
    source.executions.append(execution)
    execution.start()
    return execution


StepFunctionsParserBackend.start_execution = start_qualified


def with_version_of(execution, item):
    for key, attribute in (
        ("stateMachineVersionArn", "state_machine_version_arn"),
        ("stateMachineAliasArn", "state_machine_alias_arn"),
    ):
        value = getattr(execution, attribute, None)
        if value is not None:
            item[key] = value


_describe_execution = StepFunctionResponse.describe_execution
_list_executions = StepFunctionResponse.list_executions


def describe_execution_versioned(self):
    answer = _describe_execution(self)
    execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
    with_version_of(execution, answer.result)
    return answer


def list_executions_versioned(self):
    answer = _list_executions(self)
    by_arn = {
        execution.execution_arn: execution
        for execution in self.stepfunction_backend.describe_state_machine(
            self._get_param("stateMachineArn")
        ).executions
    }
    for item in answer.result.get("executions", []):
        execution = by_arn.get(item["executionArn"])
        if execution is not None:
            with_version_of(execution, item)
    return answer


StepFunctionResponse.describe_execution = describe_execution_versioned
StepFunctionResponse.list_executions = list_executions_versioned


# moto 5.2.1's SendTaskFailure handler passes the request's `error` to the backend and drops its `cause`,
# so the waiting Task's Catch gets {"Error"} alone where Step Functions gives {"Error", "Cause"}. `respond
# --fail` sends the coded failure (USER_INTERACTION_FAILED and the reason) as the cause: without it the
# answer step could only record NODE_EXECUTION_FAILED. Pass it on, as Step Functions does.
def send_task_failure_with_cause(self):
    self.stepfunction_backend.send_task_failure(
        self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
    )
    return EmptyResult()


StepFunctionResponse.send_task_failure = send_task_failure_with_cause

server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=bool(os.environ.get("STEPTHREAD_MOTO_VERBOSE")))
server.start()
print(f"ready {port}", flush=True)
try:
    sys.stdin.read()  # runs until the parent closes stdin (or dies)
finally:
    server.stop()
