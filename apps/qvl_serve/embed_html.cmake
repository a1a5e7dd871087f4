# cmake -P script: writes the chat page (INPUT) into a C++ header (OUTPUT) as one raw string
# literal, so the binary serves it with no file next to it.
file(READ ${INPUT} html)
string(FIND "${html}" ")qvl_chat_html\"" clash)
if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${INPUT} contains the raw-string delimiter")
endif()
file(WRITE ${OUTPUT}.tmp
     "// Generated from apps/qvl_serve/chat.html at build time; do not edit.\n#pragma once\n\n"
     "namespace qvl::serve {\ninline constexpr char kChatHtml[] = R\"qvl_chat_html(${html})qvl_chat_html\";\n}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
