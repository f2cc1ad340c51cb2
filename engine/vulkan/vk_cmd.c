/* vk_cmd: command recording and submission. Ops are recorded into one command buffer
 * and submitted at download()/sync() (or when a per-submission resource runs out):
 * barriers only where a dispatch touches a buffer that an earlier dispatch or copy of the
 * same barrier epoch wrote (or writes one that was read), descriptor sets come from pools
 * that are reset after each submission, uploads and downloads go through a host-visible
 * staging ring (UMA devices memcpy directly when the buffer is idle), and with
 * ANVIL_VK_PROFILE=1 every dispatch is bracketed by timestamp queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_internal.h"

#define SETS_PER_POOL 512
#define MAX_QUERIES 4096
#define STAGING_DEFAULT (32u << 20)

static bool check(vk_ctx *c, VkResult r, const char *what) {
    if (r == VK_SUCCESS) return true;
    be_fail(&c->base, "Vulkan: %s failed (%s)", what, vkl_result_name(r));
    return false;
}

static bool new_desc_pool(vk_ctx *c) {
    VkDescriptorPool *np = realloc(c->desc_pools, (size_t)(c->n_desc_pools + 1) * sizeof *np);
    if (!np) { be_fail(&c->base, "out of host memory"); return false; }
    c->desc_pools = np;
    VkDescriptorPoolSize ps = { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SETS_PER_POOL * 6 };
    VkDescriptorPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = SETS_PER_POOL, .poolSizeCount = 1, .pPoolSizes = &ps };
    if (!check(c, c->fn.vkCreateDescriptorPool(c->dev, &ci, NULL, &c->desc_pools[c->n_desc_pools]), "vkCreateDescriptorPool"))
        return false;
    c->n_desc_pools++;
    return true;
}

bool vk_cmd_init(vk_ctx *c) {
    VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = c->queue_family };
    if (!check(c, c->fn.vkCreateCommandPool(c->dev, &pci, NULL, &c->cmd_pool), "vkCreateCommandPool")) return false;
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = c->cmd_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1 };
    if (!check(c, c->fn.vkAllocateCommandBuffers(c->dev, &ai, &c->cmd), "vkAllocateCommandBuffers")) return false;
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if (!check(c, c->fn.vkCreateFence(c->dev, &fci, NULL, &c->fence), "vkCreateFence")) return false;
    if (!new_desc_pool(c)) return false;

    /* Staging ring: host-visible, coherent (cached when possible), also bindable. */
    c->staging_size = STAGING_DEFAULT;
    if (c->staging_size > c->max_binding - 4096) c->staging_size = (size_t)(c->max_binding - 4096);
    VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = c->staging_size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    if (!check(c, c->fn.vkCreateBuffer(c->dev, &bi, NULL, &c->staging), "vkCreateBuffer(staging)")) return false;
    VkMemoryRequirements req;
    c->fn.vkGetBufferMemoryRequirements(c->dev, c->staging, &req);
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type = -1;
    for (int pass = 0; pass < 2 && type < 0; pass++)
        for (uint32_t i = 0; i < c->memprops.memoryTypeCount && type < 0; i++) {
            VkMemoryPropertyFlags f = c->memprops.memoryTypes[i].propertyFlags;
            VkMemoryPropertyFlags want = pass == 0 ? (hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT) : hv;
            if ((req.memoryTypeBits & (1u << i)) && (f & want) == want) type = (int)i;
        }
    if (type < 0) { be_fail(&c->base, "Vulkan: no host-visible coherent memory for staging"); return false; }
    VkMemoryAllocateInfo mai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type };
    if (!check(c, c->fn.vkAllocateMemory(c->dev, &mai, NULL, &c->staging_mem), "vkAllocateMemory(staging)")) return false;
    c->fn.vkBindBufferMemory(c->dev, c->staging, c->staging_mem, 0);
    void *p = NULL;
    if (!check(c, c->fn.vkMapMemory(c->dev, c->staging_mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory(staging)")) return false;
    c->staging_map = p;

    if (c->profile) {
        VkQueryPoolCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = MAX_QUERIES };
        if (!check(c, c->fn.vkCreateQueryPool(c->dev, &qi, NULL, &c->query_pool), "vkCreateQueryPool")) return false;
        c->prof_pending = calloc(MAX_QUERIES / 2, sizeof *c->prof_pending);
        if (!c->prof_pending) return false;
    }
    c->epoch = 1;
    return true;
}

void vk_cmd_shutdown(vk_ctx *c) {
    if (!c->dev) return;
    if (c->recording) vk_flush(c);
    for (int i = 0; i < c->n_desc_pools; i++) c->fn.vkDestroyDescriptorPool(c->dev, c->desc_pools[i], NULL);
    free(c->desc_pools);
    if (c->staging) c->fn.vkDestroyBuffer(c->dev, c->staging, NULL);
    if (c->staging_mem) c->fn.vkFreeMemory(c->dev, c->staging_mem, NULL);
    if (c->fence) c->fn.vkDestroyFence(c->dev, c->fence, NULL);
    if (c->cmd_pool) c->fn.vkDestroyCommandPool(c->dev, c->cmd_pool, NULL);
    if (c->query_pool) c->fn.vkDestroyQueryPool(c->dev, c->query_pool, NULL);
    free(c->prof_pending);
    free(c->readbacks);
}


static bool begin(vk_ctx *c) {
    if (c->recording) return true;
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    if (!check(c, c->fn.vkBeginCommandBuffer(c->cmd, &bi), "vkBeginCommandBuffer")) return false;
    if (c->profile) c->fn.vkCmdResetQueryPool(c->cmd, c->query_pool, 0, MAX_QUERIES);
    c->recording = true;
    c->epoch++;
    c->cmd_epoch0 = c->epoch;
    c->n_dispatch_pending = 0;
    c->n_queries = 0;
    return true;
}

static void barrier(vk_ctx *c) {
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                           .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT };
    const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    c->fn.vkCmdPipelineBarrier(c->cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
    c->epoch++;
}

/* Barrier if any access conflicts with an access of the current epoch, then mark. */
static void hazards(vk_ctx *c, const vk_binding *b, int nb) {
    bool need = false;
    for (int i = 0; i < nb && !need; i++) {
        if (!b[i].ch) continue;
        if (b[i].ch->write_epoch == c->epoch) need = true;
        if (b[i].write && b[i].ch->read_epoch == c->epoch) need = true;
    }
    if (need) barrier(c);
    for (int i = 0; i < nb; i++) {
        if (!b[i].ch) continue;
        if (b[i].write) b[i].ch->write_epoch = c->epoch;
        else b[i].ch->read_epoch = c->epoch;
    }
}

static bool chunk_busy(const vk_ctx *c, const vk_chunk *ch) {
    return c->recording && (ch->write_epoch >= c->cmd_epoch0 || ch->read_epoch >= c->cmd_epoch0);
}

static void collect_profile(vk_ctx *c) {
    if (!c->profile || c->n_queries == 0) return;
    uint64_t *ts = calloc(c->n_queries, sizeof *ts);
    if (!ts) return;
    if (c->fn.vkGetQueryPoolResults(c->dev, c->query_pool, 0, c->n_queries, c->n_queries * sizeof *ts, ts,
                                    sizeof *ts, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
        uint64_t mask = c->timestamp_valid_bits >= 64 ? ~0ull : ((1ull << c->timestamp_valid_bits) - 1);
        for (uint32_t i = 0; i + 1 < c->n_queries; i += 2) {
            const struct vk_prof_rec *r = &c->prof_pending[i / 2];
            double ns = (double)((ts[i + 1] - ts[i]) & mask) * c->timestamp_period;
            c->prof_ns[r->pipe] += ns;
            c->prof_bytes[r->pipe] += (double)r->bytes;
            c->prof_calls[r->pipe]++;
        }
    }
    free(ts);
}

int vk_flush(vk_ctx *c) {
    if (!c->recording) return be_failed(&c->base) ? -1 : 0;
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                           .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_HOST_READ_BIT };
    c->fn.vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    c->recording = false;
    bool ok = check(c, c->fn.vkEndCommandBuffer(c->cmd), "vkEndCommandBuffer");
    if (ok) {
        VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cmd };
        ok = check(c, c->fn.vkQueueSubmit(c->queue, 1, &si, c->fence), "vkQueueSubmit");
        if (ok) ok = check(c, c->fn.vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        c->fn.vkResetFences(c->dev, 1, &c->fence);
    }
    if (ok) {
        for (int i = 0; i < c->n_readbacks; i++)
            memcpy(c->readbacks[i].dst, c->staging_map + c->readbacks[i].staging_off, c->readbacks[i].n);
        collect_profile(c);
    }
    c->n_readbacks = 0;
    c->staging_used = 0;
    c->n_queries = 0;
    for (int i = 0; i < c->n_desc_pools; i++) c->fn.vkResetDescriptorPool(c->dev, c->desc_pools[i], 0);
    c->cur_desc_pool = 0;
    c->desc_sets_in_pool = 0;
    c->fn.vkResetCommandBuffer(c->cmd, 0);
    c->epoch++;
    return ok && !be_failed(&c->base) ? 0 : -1;
}

static VkDescriptorSet alloc_set(vk_ctx *c, VkDescriptorSetLayout dsl) {
    if (c->desc_sets_in_pool >= SETS_PER_POOL) {
        c->cur_desc_pool++;
        c->desc_sets_in_pool = 0;
        if (c->cur_desc_pool >= c->n_desc_pools && !new_desc_pool(c)) return VK_NULL_HANDLE;
    }
    VkDescriptorSetAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = c->desc_pools[c->cur_desc_pool], .descriptorSetCount = 1, .pSetLayouts = &dsl };
    VkDescriptorSet ds = VK_NULL_HANDLE;
    if (!check(c, c->fn.vkAllocateDescriptorSets(c->dev, &ai, &ds), "vkAllocateDescriptorSets")) return VK_NULL_HANDLE;
    c->desc_sets_in_pool++;
    return ds;
}

void vk_dispatch(vk_ctx *c, int p, int variant, const vk_binding *b, int nb, const void *pc,
                 uint32_t gx, uint32_t gy, uint32_t gz, uint64_t bytes) {
    if (be_failed(&c->base) || gx == 0 || gy == 0 || gz == 0) return;
    vk_binding bg[8];
    if (c->pipes[p].desc.grid && nb < 8) { /* the i-quant kernels' grid, bound last */
        memcpy(bg, b, sizeof *b * (size_t)nb);
        bg[nb].ch = vk_iq_grid(c, c->pipes[p].desc.grid - 1);
        bg[nb].write = false;
        if (!bg[nb++].ch) return;
        b = bg;
    }
    VkPipeline pipe = vk_pipeline_get(c, p, variant);
    if (!pipe) return;
    if (c->profile && c->n_queries + 2 > MAX_QUERIES) vk_flush(c);
    if (!begin(c)) return;
    vk_pipeline *pl = &c->pipes[p];
    VkDescriptorSet ds = alloc_set(c, pl->dsl);
    if (!ds) return;
    VkDescriptorBufferInfo bi[8];
    VkWriteDescriptorSet w[8];
    const int a0 = pl->desc.arr0 ? 1 : 0; /* b[0], b[1] fill the 2-buffer array at binding 0 */
    for (int i = 0; i < nb; i++)
        bi[i] = (VkDescriptorBufferInfo){ .buffer = b[i].ch ? b[i].ch->buf : c->staging, .offset = 0, .range = VK_WHOLE_SIZE };
    for (int i = 0; i < nb - a0; i++)
        w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = ds, .dstBinding = (uint32_t)i,
                                       .descriptorCount = i == 0 ? 1u + (uint32_t)a0 : 1u, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bi[i == 0 ? 0 : i + a0] };
    c->fn.vkUpdateDescriptorSets(c->dev, (uint32_t)(nb - a0), w, 0, NULL);
    hazards(c, b, nb);
    c->fn.vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    c->fn.vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, 1, &ds, 0, NULL);
    if (pl->desc.pc_size) c->fn.vkCmdPushConstants(c->cmd, pl->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pl->desc.pc_size, pc);
    if (c->profile) {
        c->prof_pending[c->n_queries / 2] = (struct vk_prof_rec){ p, bytes };
        c->fn.vkCmdWriteTimestamp(c->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c->query_pool, c->n_queries);
    }
    c->used_since[p] = true;
    /* ANVIL_VK_TEST_BREAK: a planted wrong kernel (its output is never written) */
    if (!c->test_break[0] || strcmp(c->test_break, pl->used_name) != 0) c->fn.vkCmdDispatch(c->cmd, gx, gy, gz);
    if (c->profile) {
        c->fn.vkCmdWriteTimestamp(c->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->query_pool, c->n_queries + 1);
        c->n_queries += 2;
    }
    c->n_dispatch_pending++;
}

/* Reserves n bytes (16-aligned) of the staging ring, flushing when it is full. */
static size_t staging_reserve(vk_ctx *c, size_t n) {
    size_t need = (n + 15) & ~(size_t)15;
    if (c->staging_used + need > c->staging_size) vk_flush(c);
    size_t off = c->staging_used;
    c->staging_used += need;
    return off;
}

size_t vk_staging_put(vk_ctx *c, const void *src, size_t n) {
    size_t off = staging_reserve(c, n);
    memcpy(c->staging_map + off, src, n);
    return off;
}

void vk_record_upload(vk_ctx *c, vk_chunk *dst, size_t dst_off, const void *src, size_t n) {
    if (be_failed(&c->base) || n == 0) return;
    if (dst->mapped && !chunk_busy(c, dst)) { /* UMA: the buffer is idle, write it directly */
        memcpy(dst->mapped + dst_off, src, n);
        return;
    }
    const uint8_t *s = src;
    while (n > 0 && !be_failed(&c->base)) {
        size_t piece = n < c->staging_size / 2 ? n : c->staging_size / 2;
        size_t off = staging_reserve(c, piece);
        memcpy(c->staging_map + off, s, piece);
        if (!begin(c)) return;
        vk_binding bd = { dst, true };
        hazards(c, &bd, 1);
        VkBufferCopy r = { .srcOffset = off, .dstOffset = dst_off, .size = piece };
        c->fn.vkCmdCopyBuffer(c->cmd, c->staging, dst->buf, 1, &r);
        s += piece; dst_off += piece; n -= piece;
    }
}

void vk_record_download(vk_ctx *c, vk_chunk *src, size_t src_off, void *dst, size_t n) {
    if (be_failed(&c->base) || n == 0) return;
    if (src->mapped) { /* UMA: wait for pending work on it, then read directly */
        if (chunk_busy(c, src)) vk_flush(c);
        memcpy(dst, src->mapped + src_off, n);
        return;
    }
    uint8_t *d = dst;
    while (n > 0 && !be_failed(&c->base)) {
        size_t piece = n < c->staging_size / 2 ? n : c->staging_size / 2;
        size_t off = staging_reserve(c, piece);
        if (!begin(c)) return;
        vk_binding bd = { src, false };
        hazards(c, &bd, 1);
        VkBufferCopy r = { .srcOffset = src_off, .dstOffset = off, .size = piece };
        c->fn.vkCmdCopyBuffer(c->cmd, src->buf, c->staging, 1, &r);
        if (c->n_readbacks == c->cap_readbacks) {
            int cap = c->cap_readbacks ? c->cap_readbacks * 2 : 16;
            struct vk_readback *nr = realloc(c->readbacks, (size_t)cap * sizeof *nr);
            if (!nr) { be_fail(&c->base, "out of host memory"); return; }
            c->readbacks = nr;
            c->cap_readbacks = cap;
        }
        c->readbacks[c->n_readbacks++] = (struct vk_readback){ off, d, piece };
        d += piece; src_off += piece; n -= piece;
        if (n > 0) vk_flush(c);
    }
}

void vk_profile_report(vk_ctx *c) {
    if (!c->profile) return;
    double total = 0, total_bytes = 0;
    for (int p = 0; p < VKP_COUNT; p++) { total += c->prof_ns[p]; total_bytes += c->prof_bytes[p]; }
    fprintf(stderr, "anvil: %s profile (GPU timestamps): %-28s %8s %10s %10s %10s %10s %8s\n", c->name, "kernel", "calls", "total ms",
            "us/call", "MB/call", "MB total", "GB/s");
    for (int p = 0; p < VKP_COUNT; p++) {
        if (!c->prof_calls[p]) continue;
        double ms = c->prof_ns[p] / 1e6;
        fprintf(stderr, "anvil: %s profile: %-28s %8llu %10.3f %10.2f %10.3f %10.1f %8.2f\n", c->name, c->pipes[p].used_name,
                (unsigned long long)c->prof_calls[p], ms, c->prof_ns[p] / 1e3 / (double)c->prof_calls[p],
                c->prof_bytes[p] / 1e6 / (double)c->prof_calls[p], c->prof_bytes[p] / 1e6,
                c->prof_ns[p] > 0 ? c->prof_bytes[p] / c->prof_ns[p] : 0.0);
    }
    fprintf(stderr, "anvil: %s profile: total %.3f ms, %.1f MB moved, %.2f GB/s\n", c->name, total / 1e6, total_bytes / 1e6,
            total > 0 ? total_bytes / total : 0.0);
}
