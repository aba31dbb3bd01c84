; Patterns for Python sources (tree-sitter-python).

; calls: os.getenv, os.environ.get, wrappers, threading.Thread, multiprocessing
(call function: (_) @call.callee arguments: (argument_list) @call.args) @call

; os.environ["NAME"]
(subscript value: (_) @subscript.value subscript: (_) @subscript.key) @subscript

; "NAME" in os.environ
(comparison_operator) @compare

; functions: candidate env-reader wrappers
(function_definition name: (identifier) @function.name parameters: (parameters) @function.params body: (block) @function.body) @function

; module constants: ENV_NAME = "FOO_THREADS"
(assignment left: (identifier) @var.name right: (string) @var.value) @var
; name = name.upper(): kept as a local only when the call changes the case of a name (checked in code)
(assignment left: (identifier) @var.name right: (call function: (attribute)) @var.value) @var
