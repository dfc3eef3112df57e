# What the binaries say they were built with and for, as llama.cpp's cmake/build-info.cmake sets
# it: BUILD_TARGET is a normal variable (a cache entry of that name is shadowed), which
# src/build-info.c.in compiles in.
set(BUILD_COMPILER "${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
if(CMAKE_VS_PLATFORM_NAME)
    set(BUILD_TARGET ${CMAKE_VS_PLATFORM_NAME})
else()
    set(BUILD_TARGET "${CMAKE_SYSTEM_NAME} ${CMAKE_SYSTEM_PROCESSOR}")
endif()
