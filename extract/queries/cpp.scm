; C++ additions to c.scm: std::thread / std::jthread objects and std::async, by their
; qualified type or callee name (checked in code).
(qualified_identifier) @qualified

; for (auto& s : table) ... s.name: the loop variable stands for each row of the table
(for_range_loop declarator: (_) @range.var right: (_) @range.table) @range

; constructions, calls of a class's constructor: T x("NAME", 4); and a member initialiser in a
; constructor's list, X_("NAME", 4) (its class from the member's declaration)
(declaration type: (_) @construct.type declarator: (init_declarator value: (argument_list) @construct.args)) @construct
(field_initializer (field_identifier) @construct.type (argument_list) @construct.args) @construct
; names that stand for a class: using IntEnvar = Envar<int>; typedef Envar<bool> BoolEnvar; and
; a member's class, UInt32Envar X_;
(alias_declaration name: (type_identifier) @bind.target type: (type_descriptor) @bind.value) @bind
(type_definition type: (template_type) @bind.value declarator: (type_identifier) @bind.target) @bind
(field_declaration type: (_) @bind.value declarator: (field_identifier) @bind.target) @bind

; a named lambda, auto read = [](const char* env) { return getenv(env); }: a function of its
; own, visible where it is declared
(declaration declarator: (init_declarator declarator: (identifier) @function.name
  value: (lambda_expression declarator: (abstract_function_declarator) @function.declarator
                            body: (compound_statement) @function.body))) @function

; tables held in containers: std::array<const char*, 3> names = {"A_X", "A_Y", "A_Z"},
; std::vector<std::string> names{...}, EnumerationArray<Kind, const char*> names = {...}
(declaration type: [(template_type) (qualified_identifier)]
  declarator: (init_declarator declarator: (identifier) @table.declarator value: (initializer_list) @table.value)) @table

; variables initialised with a string built from others: std::string var = std::string("LIB_") + key;
; auto v = std::string(name);
(init_declarator declarator: (_) @var.declarator value: [(binary_expression) (call_expression)] @var.value) @var
