# deploy/: the Dockerfile's build stage replayed from exactly the files it copies (no container
# daemon needed), and the Kubernetes manifests validated against the 1.30 schemas (issue 47).
add_test(NAME deploy_dockerfile_replay
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/dockerfile_replay.py
                 --source ${PROJECT_SOURCE_DIR} --work ${PROJECT_BINARY_DIR}/docker-replay)
set_tests_properties(deploy_dockerfile_replay PROPERTIES LABELS "deploy;slow" TIMEOUT 3600
                     PASS_REGULAR_EXPRESSION "dockerfile_replay: PASS")
if(TARGET qvl-serve)
    add_test(NAME deploy_k8s_manifests
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/k8s_manifests_test.py
                     --source ${PROJECT_SOURCE_DIR} --venv ${PROJECT_BINARY_DIR}/serve-venv
                     --serve $<TARGET_FILE:qvl-serve>)
    set_tests_properties(deploy_k8s_manifests PROPERTIES LABELS deploy TIMEOUT 900
                         PASS_REGULAR_EXPRESSION "k8s_manifests: PASS" RESOURCE_LOCK serve_venv)
endif()
