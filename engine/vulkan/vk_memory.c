/* vk_memory: device memory for tensors. Blocks of VkDeviceMemory (<= the allocation
 * limit, ANVIL_VK_MAX_ALLOCATION lowers it) are suballocated bump-style and freed when
 * their last tensor goes; a tensor is split on row boundaries into chunks (one VkBuffer
 * each) so that no binding exceeds maxStorageBufferRange and no chunk exceeds one
 * allocation. UMA devices (integrated, CPU) get host-visible device memory, mapped, so
 * uploads and downloads can be plain memcpy; discrete GPUs get device-local memory. */
#include <stdlib.h>
#include <string.h>
#include "vk_internal.h"

struct vk_block {
    VkDeviceMemory mem;
    uint64_t size, used;
    int live;
    uint32_t type;
    uint8_t *mapped;
    vk_block *next;
};

#define CHUNK_PAD 64u /* bytes after each chunk: shaders may read one word past the data */

static int find_type(const vk_ctx *c, uint32_t bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < c->memprops.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (c->memprops.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

static int tensor_type(const vk_ctx *c, uint32_t bits) {
    const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int t = -1;
    if (c->info.uma) t = find_type(c, bits, dl | hv);
    if (t < 0) t = find_type(c, bits, dl);
    if (t < 0) t = find_type(c, bits, 0);
    return t;
}

bool vk_memory_init(vk_ctx *c) {
    vkGetPhysicalDeviceMemoryProperties(c->pdev, &c->memprops);
    c->block_size = 256ull << 20;
    if (c->block_size > c->max_alloc) c->block_size = c->max_alloc;
    return true;
}

static void block_free(vk_ctx *c, vk_block *b) {
    c->mem_allocated -= b->size;
    if (b->mapped) c->fn.vkUnmapMemory(c->dev, b->mem);
    c->fn.vkFreeMemory(c->dev, b->mem, NULL);
    free(b);
}

void vk_memory_shutdown(vk_ctx *c) {
    vk_block *b = c->blocks;
    while (b) { vk_block *n = b->next; block_free(c, b); b = n; }
    c->blocks = NULL;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

/* Places a buffer with requirements req; returns the block and sets *off. */
static vk_block *place(vk_ctx *c, const VkMemoryRequirements *req, VkDeviceSize *off) {
    int type = tensor_type(c, req->memoryTypeBits);
    if (type < 0) { anv_set_error("Vulkan: no memory type for a storage buffer"); return NULL; }
    bool dedicated = req->size > c->block_size / 2;
    if (!dedicated)
        for (vk_block *b = c->blocks; b; b = b->next) {
            uint64_t o = align_up(b->used, req->alignment);
            if (b->type == (uint32_t)type && b->size != 0 && o + req->size <= b->size && b->size == c->block_size) {
                b->used = o + req->size;
                b->live++;
                *off = o;
                return b;
            }
        }
    uint64_t size = dedicated ? req->size : c->block_size;
    if (size > c->max_alloc) {
        anv_set_error("Vulkan: allocation of %llu bytes exceeds the device's limit of %llu bytes",
                      (unsigned long long)size, (unsigned long long)c->max_alloc);
        return NULL;
    }
    vk_block *b = calloc(1, sizeof *b);
    if (!b) { anv_set_error("out of host memory"); return NULL; }
    VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = size, .memoryTypeIndex = (uint32_t)type };
    VkResult r = c->mem_limit && c->mem_allocated + size > c->mem_limit ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                                                          : c->fn.vkAllocateMemory(c->dev, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS) {
        free(b);
        anv_set_error("Vulkan: out of device memory allocating %llu bytes (%s)", (unsigned long long)size, vkl_result_name(r));
        return NULL;
    }
    b->size = size;
    b->type = (uint32_t)type;
    c->mem_allocated += size;
    VkMemoryPropertyFlags fl = c->memprops.memoryTypes[type].propertyFlags;
    if ((fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
        void *p = NULL;
        if (c->fn.vkMapMemory(c->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &p) == VK_SUCCESS) b->mapped = p;
    }
    b->used = req->size;
    b->live = 1;
    b->next = c->blocks;
    c->blocks = b;
    *off = 0;
    return b;
}

static void release(vk_ctx *c, vk_block *blk) {
    if (--blk->live > 0) return;
    for (vk_block **p = &c->blocks; *p; p = &(*p)->next)
        if (*p == blk) { *p = blk->next; break; }
    block_free(c, blk);
}

vk_storage *vk_storage_new(vk_ctx *c, size_t bytes, size_t row_bytes, bool weights) {
    (void)weights;
    if (row_bytes == 0) row_bytes = bytes ? bytes : 4;
    uint64_t limit = c->max_alloc < c->max_binding ? c->max_alloc : c->max_binding;
    limit = limit > 4096 ? limit - 4096 : limit; /* room for padding and alignment */
    if (row_bytes > limit) {
        anv_set_error("Vulkan: one row of %zu bytes exceeds the device's buffer limit of %llu bytes",
                      row_bytes, (unsigned long long)limit);
        return NULL;
    }
    size_t rows_per_chunk = (size_t)(limit / row_bytes);
    size_t n_rows = bytes ? (bytes + row_bytes - 1) / row_bytes : 1;
    int n_chunks = (int)((n_rows + rows_per_chunk - 1) / rows_per_chunk);
    vk_storage *s = calloc(1, sizeof *s + (size_t)n_chunks * sizeof(vk_chunk));
    if (!s) { anv_set_error("out of host memory"); return NULL; }
    s->total = bytes;
    for (int i = 0; i < n_chunks; i++) {
        vk_chunk *ch = &s->chunk[i];
        ch->begin = (size_t)i * rows_per_chunk * row_bytes;
        size_t end = ch->begin + rows_per_chunk * row_bytes;
        if (end > bytes) end = bytes;
        ch->size = end - ch->begin;
        VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  .size = align_up(ch->size, 4) + CHUNK_PAD,
                                  .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                  .sharingMode = VK_SHARING_MODE_EXCLUSIVE };
        VkResult r = c->fn.vkCreateBuffer(c->dev, &bi, NULL, &ch->buf);
        if (r != VK_SUCCESS) {
            anv_set_error("Vulkan: vkCreateBuffer(%llu bytes) failed (%s)", (unsigned long long)bi.size, vkl_result_name(r));
            s->n_chunks = i;
            vk_storage_free(c, s);
            return NULL;
        }
        VkMemoryRequirements req;
        c->fn.vkGetBufferMemoryRequirements(c->dev, ch->buf, &req);
        ch->block = place(c, &req, &ch->mem_offset);
        if (!ch->block) {
            c->fn.vkDestroyBuffer(c->dev, ch->buf, NULL);
            s->n_chunks = i;
            vk_storage_free(c, s);
            return NULL;
        }
        c->fn.vkBindBufferMemory(c->dev, ch->buf, ch->block->mem, ch->mem_offset);
        if (ch->block->mapped) ch->mapped = ch->block->mapped + ch->mem_offset;
        s->n_chunks = i + 1;
    }
    return s;
}

void vk_storage_free(vk_ctx *c, vk_storage *s) {
    if (!s) return;
    for (int i = 0; i < s->n_chunks; i++) {
        c->fn.vkDestroyBuffer(c->dev, s->chunk[i].buf, NULL);
        release(c, s->chunk[i].block);
    }
    free(s);
}

vk_chunk *vk_storage_find(vk_storage *s, size_t off, size_t n) {
    for (int i = 0; i < s->n_chunks; i++) {
        vk_chunk *ch = &s->chunk[i];
        if (off >= ch->begin && off + n <= ch->begin + ch->size) return ch;
        if (off >= ch->begin && off < ch->begin + ch->size) return NULL; /* spans into the next */
    }
    if (n == 0 && s->n_chunks) return &s->chunk[s->n_chunks - 1];
    return NULL;
}
