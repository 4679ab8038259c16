/*
 * tools/event-median.cuh - the median time of repeated launches between CUDA events, shared by the
 * diagnostic tools (tools/ring-rate.cu, tools/store-rate.cu; neither is part of the library).
 */
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

/* The median of 20 timed launches (after 3 untimed) in ms between events, or -1 after a message
 * when one fails; launch() makes one launch and returns its error. */
template <typename Launch>
static float median_ms(Launch launch)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 23 && ms.size() < 20; r++) {
        cudaEventRecord(e0);
        const cudaError_t err = launch();
        cudaEventRecord(e1);
        if (err != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess) {
            fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
            ms.clear();
            break;
        }
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        if (r >= 3) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (ms.empty()) return -1.0f;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}
