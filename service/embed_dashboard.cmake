# syspilot_embed_dashboard(OUT_VAR ROOT): a rule that turns ROOT/service/dashboard/* into a C++
# source of bytes (embed_assets.cmake) in the current binary folder; its path goes to OUT_VAR.
# The service's build and the libFuzzer build of the service both use it.
function(syspilot_embed_dashboard out_var root)
  file(GLOB files CONFIGURE_DEPENDS ${root}/service/dashboard/*)
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/dashboard_assets.cpp)
  add_custom_command(OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DDIR=${root}/service/dashboard -DOUT=${generated}
            -P ${root}/service/embed_assets.cmake
    DEPENDS ${files} ${root}/service/embed_assets.cmake
    COMMENT "Embedding the dashboard's files")
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
