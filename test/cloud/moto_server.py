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

server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=bool(os.environ.get("STEPTHREAD_MOTO_VERBOSE")))
server.start()
print(f"ready {port}", flush=True)
try:
    sys.stdin.read()  # runs until the parent closes stdin (or dies)
finally:
    server.stop()
