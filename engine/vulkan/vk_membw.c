/* vk_membw: the Vulkan read-bandwidth probe (see vk_membw.h). Owns its buffers, pipeline,
 * descriptors, command buffer and query pool for the duration of one call; uses only the
 * device, queue and function table of the backend context. */
#include "clock.h"
#include "vk_membw.h"

#ifdef ANVIL_HAVE_VULKAN
#include <math.h>
#include <string.h>
#include <time.h>

#include "vk_internal.h"
#include "vk_spirv.h"

#define MEMBW_GROUPS 1024u
#define MEMBW_PASSES 5

typedef struct {
    vk_ctx *c;
    VkBuffer in, out;
    VkDeviceMemory in_mem, out_mem;
    uint32_t *out_map;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkShaderModule mod;
    VkPipeline pipe;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool qpool;
} membw_vk;


static int find_memtype(const vk_ctx *c, uint32_t bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < c->memprops.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (c->memprops.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

static int make_buffer(membw_vk *m, VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                       VkMemoryPropertyFlags fallback, VkBuffer *buf, VkDeviceMemory *mem) {
    vk_ctx *c = m->c;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if (c->fn.vkCreateBuffer(c->dev, &bi, NULL, buf) != VK_SUCCESS) return -1;
    VkMemoryRequirements req;
    c->fn.vkGetBufferMemoryRequirements(c->dev, *buf, &req);
    int t = find_memtype(c, req.memoryTypeBits, want);
    if (t < 0) t = find_memtype(c, req.memoryTypeBits, fallback);
    if (t < 0) return -1;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)t};
    if (c->fn.vkAllocateMemory(c->dev, &ai, NULL, mem) != VK_SUCCESS) return -1;
    return c->fn.vkBindBufferMemory(c->dev, *buf, *mem, 0) == VK_SUCCESS ? 0 : -1;
}

static int make_pipeline(membw_vk *m) {
    vk_ctx *c = m->c;
    const anv_spirv_blob *blob = NULL;
    for (int i = 0; i < anv_spirv_count; i++)
        if (!strcmp(anv_spirv_blobs[i].name, "membw_read")) blob = &anv_spirv_blobs[i];
    if (!blob) { anv_set_error("vk_membw: the membw_read shader is not in this build"); return -1; }
    VkDescriptorSetLayoutBinding b[2];
    for (uint32_t i = 0; i < 2; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 2, .pBindings = b};
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 2 * sizeof(uint32_t)};
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = blob->size,
                                    .pCode = (const uint32_t *)(const void *)blob->data};
    if (c->fn.vkCreateDescriptorSetLayout(c->dev, &li, NULL, &m->dsl) != VK_SUCCESS) return -1;
    VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                     .pSetLayouts = &m->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr};
    if (c->fn.vkCreatePipelineLayout(c->dev, &pi, NULL, &m->layout) != VK_SUCCESS) return -1;
    if (c->fn.vkCreateShaderModule(c->dev, &smi, NULL, &m->mod) != VK_SUCCESS) return -1;
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = m->mod, .pName = "main"},
        .layout = m->layout};
    if (c->fn.vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, &m->pipe) != VK_SUCCESS) return -1;
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 2};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    if (c->fn.vkCreateDescriptorPool(c->dev, &dpi, NULL, &m->dpool) != VK_SUCCESS) return -1;
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = m->dpool,
                                       .descriptorSetCount = 1, .pSetLayouts = &m->dsl};
    if (c->fn.vkAllocateDescriptorSets(c->dev, &dai, &m->set) != VK_SUCCESS) return -1;
    VkDescriptorBufferInfo bufs[2] = {{m->in, 0, VK_WHOLE_SIZE}, {m->out, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w[2];
    for (uint32_t i = 0; i < 2; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = m->set, .dstBinding = i,
                                      .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bufs[i]};
    c->fn.vkUpdateDescriptorSets(c->dev, 2, w, 0, NULL);
    return 0;
}

static void barrier(vk_ctx *c, VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_a,
                    VkPipelineStageFlags dst, VkAccessFlags dst_a) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_a, .dstAccessMask = dst_a};
    c->fn.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One pass (the first also fills the input with 1s); returns seconds or -1. */
static double run_pass(membw_vk *m, bool fill, VkDeviceSize size, uint32_t n_vec4, uint32_t per_group, bool timestamps) {
    vk_ctx *c = m->c;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (c->fn.vkResetCommandBuffer(m->cmd, 0) != VK_SUCCESS || c->fn.vkBeginCommandBuffer(m->cmd, &bi) != VK_SUCCESS) return -1;
    if (fill) {
        c->fn.vkCmdFillBuffer(m->cmd, m->in, 0, size, 1u);
        barrier(c, m->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT);
    }
    if (timestamps) {
        c->fn.vkCmdResetQueryPool(m->cmd, m->qpool, 0, 2);
        c->fn.vkCmdWriteTimestamp(m->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, m->qpool, 0);
    }
    const uint32_t pc[2] = {n_vec4, per_group};
    c->fn.vkCmdBindPipeline(m->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, m->pipe);
    c->fn.vkCmdBindDescriptorSets(m->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, m->layout, 0, 1, &m->set, 0, NULL);
    c->fn.vkCmdPushConstants(m->cmd, m->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    c->fn.vkCmdDispatch(m->cmd, MEMBW_GROUPS, 1, 1);
    if (timestamps) c->fn.vkCmdWriteTimestamp(m->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m->qpool, 1);
    barrier(c, m->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    if (c->fn.vkEndCommandBuffer(m->cmd) != VK_SUCCESS) return -1;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &m->cmd};
    if (c->fn.vkResetFences(c->dev, 1, &m->fence) != VK_SUCCESS) return -1;
    const double t0 = anv_mono_s();
    if (c->fn.vkQueueSubmit(c->queue, 1, &si, m->fence) != VK_SUCCESS) return -1;
    if (c->fn.vkWaitForFences(c->dev, 1, &m->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS) return -1;
    double s = anv_mono_s() - t0;
    if (timestamps) {
        uint64_t ts[2];
        if (c->fn.vkGetQueryPoolResults(c->dev, m->qpool, 0, 2, sizeof ts, ts, sizeof ts[0],
                                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
            uint64_t mask = c->timestamp_valid_bits >= 64 ? ~0ull : (1ull << c->timestamp_valid_bits) - 1;
            double ns = (double)((ts[1] - ts[0]) & mask) * c->timestamp_period;
            if (ns > 0) s = ns * 1e-9;
        }
    }
    return s;
}

static void destroy(membw_vk *m) {
    vk_ctx *c = m->c;
    if (m->qpool) c->fn.vkDestroyQueryPool(c->dev, m->qpool, NULL);
    if (m->fence) c->fn.vkDestroyFence(c->dev, m->fence, NULL);
    if (m->cpool) c->fn.vkDestroyCommandPool(c->dev, m->cpool, NULL);
    if (m->dpool) c->fn.vkDestroyDescriptorPool(c->dev, m->dpool, NULL);
    if (m->pipe) c->fn.vkDestroyPipeline(c->dev, m->pipe, NULL);
    if (m->mod) c->fn.vkDestroyShaderModule(c->dev, m->mod, NULL);
    if (m->layout) c->fn.vkDestroyPipelineLayout(c->dev, m->layout, NULL);
    if (m->dsl) c->fn.vkDestroyDescriptorSetLayout(c->dev, m->dsl, NULL);
    if (m->out_map) c->fn.vkUnmapMemory(c->dev, m->out_mem);
    if (m->in) c->fn.vkDestroyBuffer(c->dev, m->in, NULL);
    if (m->out) c->fn.vkDestroyBuffer(c->dev, m->out, NULL);
    if (m->in_mem) c->fn.vkFreeMemory(c->dev, m->in_mem, NULL);
    if (m->out_mem) c->fn.vkFreeMemory(c->dev, m->out_mem, NULL);
}

int vk_membw_read(backend *vk, size_t bytes, double *gbps) {
    if (!vk || !vk->name || strncmp(vk->name, "vulkan", 6) != 0) {
        anv_set_error("vk_membw: not a Vulkan backend");
        return -1;
    }
    if (bytes < (1u << 20)) { anv_set_error("vk_membw: buffer of %zu bytes is too small (>= 1 MiB)", bytes); return -1; }
    vk_ctx *c = vk_of(vk);
    be_sync(vk);  /* nothing of the backend's own in flight */
    VkDeviceSize size = bytes;
    if (c->max_binding && size > c->max_binding) size = c->max_binding;
    if (c->max_alloc && size > c->max_alloc) size = c->max_alloc;
    const VkDeviceSize unit = 16u * 256u * MEMBW_GROUPS;
    size = size / unit * unit;
    if (size == 0) { anv_set_error("vk_membw: the device's limits leave no room for the probe"); return -1; }
    const uint32_t n_vec4 = (uint32_t)(size / 16), per_group = n_vec4 / MEMBW_GROUPS;
    membw_vk m = {.c = c};
    int rc = -1;
    const bool timestamps = c->timestamp_valid_bits > 0 && c->timestamp_period > 0;
    if (make_buffer(&m, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &m.in, &m.in_mem) != 0 ||
        make_buffer(&m, MEMBW_GROUPS * sizeof(uint32_t), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &m.out, &m.out_mem) != 0) {
        anv_set_error("vk_membw: cannot allocate %llu MiB on %s", (unsigned long long)(size >> 20), vk->name);
        goto done;
    }
    void *map = NULL;
    if (c->fn.vkMapMemory(c->dev, m.out_mem, 0, VK_WHOLE_SIZE, 0, &map) != VK_SUCCESS) {
        anv_set_error("vk_membw: cannot map the result buffer");
        goto done;
    }
    m.out_map = map;
    if (make_pipeline(&m) != 0) {
        if (!*anv_last_error() || !strstr(anv_last_error(), "vk_membw")) anv_set_error("vk_membw: cannot create the pipeline on %s", vk->name);
        goto done;
    }
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = c->queue_family};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    if (c->fn.vkCreateCommandPool(c->dev, &cpi, NULL, &m.cpool) != VK_SUCCESS || c->fn.vkCreateFence(c->dev, &fi, NULL, &m.fence) != VK_SUCCESS ||
        (timestamps && c->fn.vkCreateQueryPool(c->dev, &qi, NULL, &m.qpool) != VK_SUCCESS)) {
        anv_set_error("vk_membw: cannot create the command pool, fence or query pool");
        goto done;
    }
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = m.cpool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    if (c->fn.vkAllocateCommandBuffers(c->dev, &cai, &m.cmd) != VK_SUCCESS) {
        anv_set_error("vk_membw: cannot allocate a command buffer");
        goto done;
    }
    double best = INFINITY;
    for (int pass = 0; pass <= MEMBW_PASSES; pass++) {
        memset(m.out_map, 0, MEMBW_GROUPS * sizeof(uint32_t));
        double s = run_pass(&m, pass == 0, size, n_vec4, per_group, timestamps);
        if (s < 0) { anv_set_error("vk_membw: pass %d failed on %s", pass, vk->name); goto done; }
        uint64_t total = 0;
        for (uint32_t g = 0; g < MEMBW_GROUPS; g++) total += m.out_map[g];
        if (total != size / 4) {
            anv_set_error("vk_membw: pass %d read a sum of %llu, expected %llu", pass, (unsigned long long)total,
                          (unsigned long long)(size / 4));
            goto done;
        }
        if (pass > 0 && s < best) best = s;
    }
    *gbps = (double)size / best / 1e9;
    rc = 0;
done:
    destroy(&m);
    return rc;
}
#else
typedef int vk_membw_not_built; /* ISO C wants a declaration in every translation unit */
#endif
