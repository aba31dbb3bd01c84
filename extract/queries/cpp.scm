; C++ additions to c.scm: std::thread / std::jthread objects and std::async, by their
; qualified type or callee name (checked in code).
(qualified_identifier) @qualified

; for (auto& s : table) ... s.name: the loop variable stands for each row of the table
(for_range_loop declarator: (_) @range.var right: (_) @range.table) @range
