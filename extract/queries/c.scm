; Patterns for C and C++ sources (tree-sitter-c / tree-sitter-cpp share these node names).
; The 0.20 runtime ignores predicates, so callee names are checked in extract/code_scan.cpp.

; every call: env reads, wrapper calls, thread creation, affinity, GPU runtime calls
(call_expression function: (_) @call.callee arguments: (argument_list) @call.args) @call

; functions: candidate env-reader wrappers and the enclosing function of every fact
(function_definition declarator: (_) @function.declarator body: (_) @function.body) @function

; function-like macros: wrappers such as readenv(p, n) and name builders such as NCCL_PARAM
(preproc_function_def name: (identifier) @macro.name parameters: (preproc_params) @macro.params) @macro

; object-like macros: string constants such as #define ENV_CLEVEL "ZSTD_CLEVEL"
(preproc_def name: (identifier) @const.name value: (preproc_arg) @const.value) @const

; variables initialised with a string: const char *envname = "MALLOC_CONF";
(init_declarator declarator: (_) @var.declarator value: [(string_literal) (concatenated_string)] @var.value) @var

; #pragma omp parallel ...
(preproc_call directive: (preproc_directive) @pragma.directive argument: (preproc_arg) @pragma.arg) @pragma

; loops: busy-wait detection (a condition polled with nothing or a pause/yield in the body)
(while_statement condition: (_) @loop.cond body: (_) @loop.body) @loop
(do_statement body: (_) @loop.body condition: (_) @loop.cond) @loop
(for_statement body: (_) @loop.body) @loop

; constant tables: static struct { const char* env_var; ... } group_alias[] = {{"KMP_FOR_TPROFILE", ...}, ...}
(init_declarator declarator: (array_declarator) @table.declarator value: (initializer_list) @table.value) @table
; tables of strings behind pointers: static const char* const names[] = {"A_X", "A_Y", 0}
(init_declarator declarator: (pointer_declarator declarator: (array_declarator)) @table.declarator value: (initializer_list) @table.value) @table

; functions stored in pointers and struct fields, which indirect calls reach: fp = f;
; p->get = &f; {.get = f}; T (*fp)(const char*) = f; {1, f} (positional, by the struct's fields)
(assignment_expression left: (_) @bind.target right: (_) @bind.value) @bind
(initializer_pair designator: (_) @bind.target value: (_) @bind.value) @bind
(init_declarator declarator: (_) @bind.target value: [(identifier) (pointer_expression) (cast_expression) (initializer_list)] @bind.value) @bind

; struct fields in order (positional initializers of tables and plugin structs), and typedefs
(struct_specifier body: (field_declaration_list) @record.body) @record
(type_definition type: (_) @typedef.type) @typedef
