; C++ additions to c.scm: std::thread / std::jthread objects and std::async, by their
; qualified type or callee name (checked in code).
(qualified_identifier) @qualified
