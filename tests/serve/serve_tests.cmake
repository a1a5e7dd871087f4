# qvl-serve through the real binary on 127.0.0.1 with the tiny checkpoint (label serve). The
# openai-client tests run in a venv created on first use under the build tree; they and the
# browser test print SKIP and count as skipped (exit 77) when PyPI or chromium is unavailable.
set(serve_test_args --serve $<TARGET_FILE:qvl-serve> --run $<TARGET_FILE:qvl-run>
                    --model ${CMAKE_CURRENT_SOURCE_DIR}/data/tiny-qwen3vl
                    --images ${CMAKE_CURRENT_SOURCE_DIR}/data/images)
set(serve_venv ${PROJECT_BINARY_DIR}/serve-venv)
add_test(NAME serve_api
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/api_test.py ${serve_test_args}
                 --venv ${serve_venv})
set_tests_properties(serve_api PROPERTIES LABELS serve TIMEOUT 900 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "serve_api: PASS" RESOURCE_LOCK serve_venv)
add_test(NAME serve_browser
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/browser_test.py ${serve_test_args}
                 --out ${PROJECT_BINARY_DIR}/serve-artifacts)
set_tests_properties(serve_browser PROPERTIES LABELS serve TIMEOUT 300 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "serve_browser: PASS")
# Hostile input, slow clients and a one-minute soak with random disconnects (bench: longer).
# Under the sanitizers every hostile case runs with a 20-second soak (longer than the 10 s header
# timeout, so the slow-loris clients are seen closed), in the ASan+UBSan phase.
set(reliability_soak 60)
set(reliability_labels "serve;slow")
if(QVL_SANITIZE)
    set(reliability_soak 20)
    set(reliability_labels "serve;sanitize")
endif()
add_test(NAME serve_reliability
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/reliability_test.py ${serve_test_args}
                 --soak-seconds ${reliability_soak})
set_tests_properties(serve_reliability PROPERTIES LABELS "${reliability_labels}" TIMEOUT 600
                     PASS_REGULAR_EXPRESSION "serve_reliability: PASS")
# Issue 47's figures through the binary: a 200 MiB chunked body, 600 slow and idle connections,
# keep-alive comments while queued, an answer cut at the shutdown deadline, the threads line.
add_test(NAME serve_hardening
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/hardening_test.py ${serve_test_args})
set_tests_properties(serve_hardening PROPERTIES LABELS serve TIMEOUT 600
                     PASS_REGULAR_EXPRESSION "serve_hardening: PASS")
