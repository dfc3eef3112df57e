/* ggml-vulkan stand-in: a Vulkan instance through the loader, the devices ggml would use, and one
   compute shader (mul_mat_vec.comp, SPIR-V embedded at build time) run on the chosen device.

   Device choice is ggml's (ggml/src/ggml-vulkan/ggml-vulkan.cpp, ggml_vk_instance_init):
   GGML_VK_VISIBLE_DEVICES lists physical-device indices (comma-separated) and is used as given,
   CPU-type devices (lavapipe) included; without it every discrete or integrated GPU is used, else
   the first device that is not a CPU, else none ("ggml_vulkan: No devices found."). An invalid
   index is refused as ggml refuses it (ggml throws; the stand-in reports no device). */
#include "ggml-backend.h"
#include <vulkan/vulkan.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char mini_mul_mat_vec_spv[];
extern const unsigned mini_mul_mat_vec_spv_len;

#define MAX_DEV 16
static int inited;
static VkInstance instance;
static VkPhysicalDevice devs[MAX_DEV];
static int ndev;
static char desc[MAX_DEV][VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
static int mib[MAX_DEV];

static void vk_init(void) {
    if (inited) return;
    inited = 1;
    VkApplicationInfo app = { VK_STRUCTURE_TYPE_APPLICATION_INFO };
    app.pApplicationName = "ggml-vulkan";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci = { VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO };
    ci.pApplicationInfo = &app;
    VkResult r = vkCreateInstance(&ci, NULL, &instance);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "ggml_vulkan: vkCreateInstance failed (VkResult %d)\n", (int) r);
        return;
    }
    uint32_t n = MAX_DEV;
    VkPhysicalDevice all[MAX_DEV];
    if (vkEnumeratePhysicalDevices(instance, &n, all) < 0) n = 0;
    VkPhysicalDeviceProperties props[MAX_DEV];
    for (uint32_t i = 0; i < n; i++) vkGetPhysicalDeviceProperties(all[i], &props[i]);
    int idx[MAX_DEV];
    int k = 0;
    const char * env = getenv("GGML_VK_VISIBLE_DEVICES");
    if (env) {
        const char * s = env;
        while (*s && k < MAX_DEV) {
            char * end;
            unsigned long v = strtoul(s, &end, 10);
            if (end == s) { s++; continue; } /* ',' or ' ' */
            if (v >= n) {
                fprintf(stderr, "ggml_vulkan: Invalid device index %lu in GGML_VK_VISIBLE_DEVICES.\n", v);
                return;
            }
            idx[k++] = (int) v;
            s = end;
        }
    } else {
        for (uint32_t i = 0; i < n && k < MAX_DEV; i++) {
            if (props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU) {
                idx[k++] = (int) i;
            }
        }
        for (uint32_t i = 0; i < n && k == 0; i++) {
            if (props[i].deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) idx[k++] = (int) i;
        }
    }
    if (k == 0) {
        fprintf(stderr, "ggml_vulkan: No devices found.\n");
        return;
    }
    for (int d = 0; d < k; d++) {
        devs[d] = all[idx[d]];
        snprintf(desc[d], sizeof desc[d], "%s", props[idx[d]].deviceName);
        VkPhysicalDeviceMemoryProperties mem;
        vkGetPhysicalDeviceMemoryProperties(devs[d], &mem);
        VkDeviceSize local = 0;
        for (uint32_t h = 0; h < mem.memoryHeapCount; h++) {
            if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) local += mem.memoryHeaps[h].size;
        }
        mib[d] = (int) (local / (1024 * 1024));
        fprintf(stderr, "ggml_vulkan: %d = %s\n", d, desc[d]);
    }
    ndev = k;
}

static int vk_count(void) { vk_init(); return ndev; }
static const char * vk_description(int d) { vk_init(); return d >= 0 && d < ndev ? desc[d] : NULL; }
static int vk_mib(int d) { vk_init(); return d >= 0 && d < ndev ? mib[d] : 0; }

static int memory_type(VkPhysicalDevice pd, uint32_t bits, VkMemoryPropertyFlags want) {
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    for (uint32_t i = 0; i < mem.memoryTypeCount; i++) {
        if ((bits & (1u << i)) && (mem.memoryTypes[i].propertyFlags & want) == want) return (int) i;
    }
    return -1;
}

#define CHECK(x) do { if ((x) != VK_SUCCESS) { fprintf(stderr, "ggml_vulkan: %s failed\n", #x); goto done; } } while (0)

/* y[m] = A[m x k] x[k] on device d with the embedded shader; 0 on success */
static int vk_mul_mat(int d, const float * a, const float * x, float * y, int m, int k) {
    vk_init();
    if (d < 0 || d >= ndev || m <= 0 || k <= 0) return 1;
    int rc = 1;
    VkPhysicalDevice pd = devs[d];
    VkDevice dev = VK_NULL_HANDLE;
    VkBuffer buf[3] = { VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE };
    VkDeviceMemory memory[3] = { VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE };
    VkShaderModule shader = VK_NULL_HANDLE;
    VkDescriptorSetLayout dsl = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkCommandPool cpool = VK_NULL_HANDLE;

    uint32_t nq = 8;
    VkQueueFamilyProperties qf[8];
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t family = nq;
    for (uint32_t i = 0; i < nq; i++) {
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) { family = i; break; }
    }
    if (family == nq) { fprintf(stderr, "ggml_vulkan: %s has no compute queue\n", desc[d]); return 1; }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = { VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO };
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci = { VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO };
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
    VkQueue queue;
    vkGetDeviceQueue(dev, family, 0, &queue);

    const size_t sizes[3] = { (size_t) m * k * sizeof(float), (size_t) k * sizeof(float), (size_t) m * sizeof(float) };
    const void * in[2] = { a, x };
    for (int i = 0; i < 3; i++) {
        VkBufferCreateInfo bci = { VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO };
        bci.size = sizes[i];
        bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
        CHECK(vkCreateBuffer(dev, &bci, NULL, &buf[i]));
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(dev, buf[i], &req);
        int type = memory_type(pd, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        if (type < 0) { fprintf(stderr, "ggml_vulkan: no host-visible memory\n"); goto done; }
        VkMemoryAllocateInfo mai = { VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO };
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = (uint32_t) type;
        CHECK(vkAllocateMemory(dev, &mai, NULL, &memory[i]));
        CHECK(vkBindBufferMemory(dev, buf[i], memory[i], 0));
        if (i < 2) {
            void * p;
            CHECK(vkMapMemory(dev, memory[i], 0, sizes[i], 0, &p));
            memcpy(p, in[i], sizes[i]);
            vkUnmapMemory(dev, memory[i]);
        }
    }

    VkShaderModuleCreateInfo smi = { VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO };
    smi.codeSize = mini_mul_mat_vec_spv_len;
    smi.pCode = (const uint32_t *) (const void *) mini_mul_mat_vec_spv;
    CHECK(vkCreateShaderModule(dev, &smi, NULL, &shader));
    VkDescriptorSetLayoutBinding b[3];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3; i++) {
        b[i].binding = (uint32_t) i;
        b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        b[i].descriptorCount = 1;
        b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dli = { VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO };
    dli.bindingCount = 3;
    dli.pBindings = b;
    CHECK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &dsl));
    VkPushConstantRange pcr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t) };
    VkPipelineLayoutCreateInfo pli = { VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO };
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &dsl;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pcr;
    CHECK(vkCreatePipelineLayout(dev, &pli, NULL, &layout));
    VkComputePipelineCreateInfo cpi = { VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO };
    cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = shader;
    cpi.stage.pName = "main";
    cpi.layout = layout;
    CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &pipeline));

    VkDescriptorPoolSize ps = { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 };
    VkDescriptorPoolCreateInfo dpi = { VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO };
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    CHECK(vkCreateDescriptorPool(dev, &dpi, NULL, &pool));
    VkDescriptorSetAllocateInfo dai = { VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO };
    dai.descriptorPool = pool;
    dai.descriptorSetCount = 1;
    dai.pSetLayouts = &dsl;
    VkDescriptorSet set;
    CHECK(vkAllocateDescriptorSets(dev, &dai, &set));
    VkDescriptorBufferInfo bi[3];
    VkWriteDescriptorSet w[3];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 3; i++) {
        bi[i].buffer = buf[i];
        bi[i].offset = 0;
        bi[i].range = VK_WHOLE_SIZE;
        w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w[i].dstSet = set;
        w[i].dstBinding = (uint32_t) i;
        w[i].descriptorCount = 1;
        w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[i].pBufferInfo = &bi[i];
    }
    vkUpdateDescriptorSets(dev, 3, w, 0, NULL);

    VkCommandPoolCreateInfo cpci = { VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO };
    cpci.queueFamilyIndex = family;
    CHECK(vkCreateCommandPool(dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO };
    cbai.commandPool = cpool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkCommandBufferBeginInfo cbbi = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    cbbi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    CHECK(vkBeginCommandBuffer(cb, &cbbi));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    uint32_t dims[2] = { (uint32_t) m, (uint32_t) k };
    vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof dims, dims);
    vkCmdDispatch(cb, ((uint32_t) m + 31) / 32, 1, 1);
    CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = { VK_STRUCTURE_TYPE_SUBMIT_INFO };
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    CHECK(vkQueueWaitIdle(queue));
    void * out;
    CHECK(vkMapMemory(dev, memory[2], 0, sizes[2], 0, &out));
    memcpy(y, out, sizes[2]);
    vkUnmapMemory(dev, memory[2]);
    rc = 0;
done:
    if (dev != VK_NULL_HANDLE) {
        if (cpool) vkDestroyCommandPool(dev, cpool, NULL);
        if (pool) vkDestroyDescriptorPool(dev, pool, NULL);
        if (pipeline) vkDestroyPipeline(dev, pipeline, NULL);
        if (layout) vkDestroyPipelineLayout(dev, layout, NULL);
        if (dsl) vkDestroyDescriptorSetLayout(dev, dsl, NULL);
        if (shader) vkDestroyShaderModule(dev, shader, NULL);
        for (int i = 0; i < 3; i++) {
            if (buf[i]) vkDestroyBuffer(dev, buf[i], NULL);
            if (memory[i]) vkFreeMemory(dev, memory[i], NULL);
        }
        vkDestroyDevice(dev, NULL);
    }
    return rc;
}

static ggml_backend_i vulkan = { "Vulkan", vk_count, NULL, vk_description, vk_mib, vk_mul_mat };

MINI_EXPORT ggml_backend_i * ggml_backend_init(void) { return &vulkan; }
