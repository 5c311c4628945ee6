-- SPDX-License-Identifier: BSD-3-Clause
-- gridwire.lua: a Wireshark dissector for gridwire frames (doc/protocol.md).
--
-- The 32-byte header after UDP (little-endian), then by type: DATA with its
-- records (MSG, PUB, REJECT with its reason, SUBS with its topics), ACK
-- with its SACK bits, HELLO with the sender's name, capabilities and [auth]
-- key ids; and the [auth]
-- trailer when there is one (slot, flags, roll, key id, counter, tag). An
-- encrypted payload ([auth] mode encrypt) is shown as such, and its CRC,
-- which covers the plaintext, is not checked. Otherwise the CRC32C is
-- checked: a mismatch, a malformed record or payload, and a length that
-- does not add up get expert info.
--
-- Registered on UDP port 47000 (the default [port] udp_port), which it
-- takes over from Wireshark's HCrt dissector, and on the port set in the
-- protocol preferences; a heuristic on the magic "GW" and version finds
-- gridwire on any other UDP port.
--
--   tshark -X lua_script:gridwire.lua -r capture.pcap -Y gridwire
-- or copy it to ~/.local/lib/wireshark/plugins/ (installed: the system's
-- wireshark plugins folder).

local gw = Proto("gridwire", "gridwire")

local types = { [1] = "DATA", [2] = "ACK", [3] = "HELLO" }
local kinds = { [1] = "MSG", [2] = "REJECT", [3] = "PUB", [4] = "SUBS" }
local classes = { [0] = "bulk", [1] = "urgent" }

local f = {
    magic = ProtoField.uint16("gridwire.magic", "Magic", base.HEX),
    version = ProtoField.uint8("gridwire.version", "Version"),
    type = ProtoField.uint8("gridwire.type", "Type", base.DEC, types),
    src_node = ProtoField.uint16("gridwire.src_node", "Source node"),
    dst_node = ProtoField.uint16("gridwire.dst_node", "Destination node"),
    lane = ProtoField.uint16("gridwire.lane", "Lane", base.DEC, nil, 0x7fff),
    class = ProtoField.uint16("gridwire.class", "Class", base.DEC, classes, 0x8000),
    nrec = ProtoField.uint16("gridwire.nrec", "Records"),
    epoch = ProtoField.uint32("gridwire.epoch", "Epoch", base.HEX),
    seq = ProtoField.uint32("gridwire.seq", "Sequence"),
    base = ProtoField.uint32("gridwire.base", "Base (acknowledged below)"),
    len = ProtoField.uint32("gridwire.len", "Payload length"),
    crc = ProtoField.uint32("gridwire.crc", "CRC32C", base.HEX),
    crc_ok = ProtoField.bool("gridwire.crc_ok", "CRC32C good"),
    rec = ProtoField.none("gridwire.rec", "Record"),
    rec_len = ProtoField.uint16("gridwire.rec.len", "Length"),
    rec_kind = ProtoField.uint8("gridwire.rec.kind", "Kind", base.DEC, kinds),
    rec_ep = ProtoField.uint32("gridwire.rec.dst_ep", "Destination endpoint", base.HEX),
    rec_chan = ProtoField.uint16("gridwire.rec.src_chan", "Sender channel"),
    rec_msg = ProtoField.uint32("gridwire.rec.msg_id", "Message id"),
    rec_data = ProtoField.bytes("gridwire.rec.data", "Data"),
    rej_err = ProtoField.int32("gridwire.reject.err", "Reason (negative errno)"),
    rej_node = ProtoField.uint16("gridwire.reject.node", "Node the message was for"),
    subs_version = ProtoField.uint32("gridwire.subs.version", "Advertisement version"),
    subs_total = ProtoField.uint16("gridwire.subs.total", "Topics in the advertisement"),
    subs_first = ProtoField.uint16("gridwire.subs.first", "First entry here"),
    subs_topic = ProtoField.string("gridwire.subs.topic", "Topic"),
    ack_epoch = ProtoField.uint32("gridwire.ack.epoch", "Acknowledged epoch", base.HEX),
    ack_cum = ProtoField.uint32("gridwire.ack.cum", "Delivered below"),
    ack_nbits = ProtoField.uint16("gridwire.ack.nbits", "SACK bits"),
    ack_grant = ProtoField.uint16("gridwire.ack.grant", "Grant (x 64 bytes in flight, 0: none)"),
    ack_held = ProtoField.string("gridwire.ack.held", "Held (SACK)"),
    caps = ProtoField.uint32("gridwire.hello.caps", "Capabilities", base.HEX),
    cap_auth = ProtoField.bool("gridwire.hello.caps.auth", "Frames authenticated", 32, nil, 1),
    cap_batch = ProtoField.bool("gridwire.hello.caps.batching", "Batching", 32, nil, 2),
    cap_urgent = ProtoField.bool("gridwire.hello.caps.urgent", "Urgent lanes", 32, nil, 4),
    cap_grant = ProtoField.bool("gridwire.hello.caps.grant", "Grants in ACKs (congestion control)", 32, nil, 8),
    cap_topics = ProtoField.bool("gridwire.hello.caps.topics", "Topics (PUB and SUBS records)", 32, nil, 16),
    interval = ProtoField.uint16("gridwire.hello.interval_ms", "Interval (ms)"),
    name = ProtoField.string("gridwire.hello.name", "Node name"),
    auth = ProtoField.none("gridwire.auth", "Auth trailer"),
    auth_slot = ProtoField.uint8("gridwire.auth.slot", "Sender slot"),
    auth_flags = ProtoField.uint8("gridwire.auth.flags", "Flags", base.HEX),
    auth_encrypted = ProtoField.bool("gridwire.auth.encrypted", "Payload encrypted", 8, nil, 1),
    auth_aead = ProtoField.uint8("gridwire.auth.aead", "AEAD", base.DEC,
        { [1] = "AES-256-GCM", [2] = "ChaCha20-Poly1305" }, 0xf0),
    auth_roll = ProtoField.uint16("gridwire.auth.roll", "Key roll"),
    auth_key_id = ProtoField.uint32("gridwire.auth.key_id", "Key id", base.HEX),
    auth_ctr = ProtoField.uint64("gridwire.auth.counter", "Counter"),
    ciphertext = ProtoField.bytes("gridwire.ciphertext", "Encrypted payload"),
    hello_keys = ProtoField.string("gridwire.hello.keys", "Key ids held"),
    auth_tag = ProtoField.bytes("gridwire.auth.tag", "Tag"),
}
gw.fields = f

local e_crc = ProtoExpert.new("gridwire.crc_bad", "CRC32C does not match",
    expert.group.CHECKSUM, expert.severity.ERROR)
local e_malformed = ProtoExpert.new("gridwire.malformed", "Malformed gridwire payload",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_length = ProtoExpert.new("gridwire.length", "Lengths do not add up",
    expert.group.MALFORMED, expert.severity.ERROR)
gw.experts = { e_crc, e_malformed, e_length }

gw.prefs.port = Pref.uint("UDP port", 47000, "The gateways' [port] udp_port")

-- Wireshark's Lua is 5.2: bit operations through bit32.
local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift

-- CRC32C (Castagnoli, reflected 0x82F63B78), a byte table.
local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if c % 2 == 1 then c = bxor(rshift(c, 1), 0x82F63B78) else c = rshift(c, 1) end
    end
    crc_table[i] = c
end

local function crc32c(bytes, from, to, crc)
    for i = from, to - 1 do
        crc = bxor(crc_table[band(bxor(crc, bytes:get_index(i)), 0xff)], rshift(crc, 8))
    end
    return crc
end

local function frame_crc(tvb, len)
    local b = tvb:bytes(0, 32 + len)
    local crc = crc32c(b, 0, 28, 0xffffffff)
    crc = crc32c(ByteArray.new("00 00 00 00"), 0, 4, crc)
    crc = crc32c(b, 32, 32 + len, crc)
    return bxor(crc, 0xffffffff)
end

-- A SUBS record's data: version, total, first, then (id, name) entries.
local function subs(tvb, tree, at, rlen)
    if rlen < 8 or (rlen - 8) % 36 ~= 0 or (rlen - 8) / 36 > 28 then
        tree:add_proto_expert_info(e_malformed, "SUBS data is not 8 + 36 x n bytes (n <= 28)")
        return
    end
    tree:add_le(f.subs_version, tvb(at, 4))
    tree:add_le(f.subs_total, tvb(at + 4, 2))
    tree:add_le(f.subs_first, tvb(at + 6, 2))
    for e = at + 8, at + rlen - 36, 36 do
        tree:add(f.subs_topic, tvb(e, 36), string.format("%s (id %08x)", tvb(e + 4, 32):stringz(),
            tvb(e, 4):le_uint()))
    end
end

local function records(tvb, tree, len, nrec)
    local off, n = 32, 0
    while off < 32 + len do
        if off + 16 > 32 + len then
            tree:add_proto_expert_info(e_malformed, "record header runs past the payload")
            return n
        end
        local rlen = tvb(off, 2):le_uint()
        local kind = tvb(off + 2, 1):uint()
        if off + 16 + rlen > 32 + len or not kinds[kind] then
            tree:add_proto_expert_info(e_malformed,
                kinds[kind] and "record data runs past the payload" or "unknown record kind")
            return n
        end
        local r = tree:add(f.rec, tvb(off, 16 + rlen))
        r:append_text(string.format(": %s, %d bytes", kinds[kind], rlen))
        r:add_le(f.rec_len, tvb(off, 2))
        r:add(f.rec_kind, tvb(off + 2, 1))
        r:add_le(f.rec_ep, tvb(off + 4, 4))
        r:add_le(f.rec_chan, tvb(off + 8, 2))
        r:add_le(f.rec_msg, tvb(off + 12, 4))
        if kind == 2 and rlen >= 12 then
            r:add_le(f.rej_err, tvb(off + 16, 4))
            r:add_le(f.rej_node, tvb(off + 24, 2))
        elseif kind == 4 then
            subs(tvb, r, off + 16, rlen)
        elseif rlen > 0 then
            r:add(f.rec_data, tvb(off + 16, rlen))
        end
        off = off + 16 + rlen
        n = n + 1
    end
    if n ~= nrec then
        tree:add_proto_expert_info(e_length, string.format("%d records, the header says %d", n, nrec))
    end
    return n
end

local function ack(tvb, tree, len)
    if len < 12 then
        tree:add_proto_expert_info(e_malformed, "ACK shorter than 12 bytes")
        return
    end
    tree:add_le(f.ack_epoch, tvb(32, 4))
    tree:add_le(f.ack_cum, tvb(36, 4))
    local nbits = tvb(40, 2):le_uint()
    tree:add_le(f.ack_nbits, tvb(40, 2))
    tree:add_le(f.ack_grant, tvb(42, 2))
    if nbits % 8 ~= 0 or nbits > 256 or len ~= 12 + nbits / 8 then
        tree:add_proto_expert_info(e_malformed, "SACK bits do not match the ACK's length")
        return
    end
    local cum, held = tvb(36, 4):le_uint(), {}
    for i = 0, nbits - 1 do
        if band(rshift(tvb(44 + math.floor(i / 8), 1):uint(), i % 8), 1) == 1 then
            held[#held + 1] = cum + 1 + i
        end
    end
    if nbits > 0 then
        tree:add(f.ack_held, tvb(44, nbits / 8), #held > 0 and table.concat(held, " ") or "none")
    end
end

local function hello(tvb, tree, len)
    local name_len = len >= 8 and tvb(38, 1):uint() or 0
    local nkeys = len >= 8 and tvb(39, 1):uint() or 0
    if len < 8 or name_len < 1 or name_len > 31 or nkeys > 2 or len ~= 8 + name_len + 4 * nkeys then
        tree:add_proto_expert_info(e_malformed, "HELLO length and name length disagree")
        return nil
    end
    if nkeys > 0 then
        local ids = {}
        for i = 0, nkeys - 1 do
            ids[#ids + 1] = string.format("%08x", tvb(40 + name_len + 4 * i, 4):le_uint())
        end
        tree:add(f.hello_keys, tvb(40 + name_len, 4 * nkeys), table.concat(ids, " "))
    end
    local c = tree:add_le(f.caps, tvb(32, 4))
    c:add_le(f.cap_auth, tvb(32, 4))
    c:add_le(f.cap_batch, tvb(32, 4))
    c:add_le(f.cap_urgent, tvb(32, 4))
    c:add_le(f.cap_grant, tvb(32, 4))
    c:add_le(f.cap_topics, tvb(32, 4))
    tree:add_le(f.interval, tvb(36, 2))
    tree:add(f.name, tvb(40, name_len))
    return tvb(40, name_len):string()
end

local function looks_like_gridwire(tvb)
    return tvb:len() >= 32 and tvb(0, 2):le_uint() == 0x5747 and tvb(2, 1):uint() == 1
end

function gw.dissector(tvb, pinfo, root)
    if not looks_like_gridwire(tvb) then return 0 end
    local ftype, len = tvb(3, 1):uint(), tvb(24, 4):le_uint()
    pinfo.cols.protocol = "gridwire"
    local tree = root:add(gw, tvb(0, math.min(tvb:len(), 32 + len)))
    tree:add_le(f.magic, tvb(0, 2))
    tree:add(f.version, tvb(2, 1))
    tree:add(f.type, tvb(3, 1))
    tree:add_le(f.src_node, tvb(4, 2))
    tree:add_le(f.dst_node, tvb(6, 2))
    tree:add_le(f.lane, tvb(8, 2))
    tree:add_le(f.class, tvb(8, 2))
    tree:add_le(f.nrec, tvb(10, 2))
    tree:add_le(f.epoch, tvb(12, 4))
    tree:add_le(f.seq, tvb(16, 4))
    tree:add_le(f.base, tvb(20, 4))
    tree:add_le(f.len, tvb(24, 4))
    local crc_item = tree:add_le(f.crc, tvb(28, 4))
    local src, dst = tvb(4, 2):le_uint(), tvb(6, 2):le_uint()
    local lane = tvb(8, 2):le_uint()
    local info = string.format("%s %d -> %s lane %d%s", types[ftype] or "type " .. ftype, src,
        dst == 0xffff and "all" or tostring(dst), lane % 0x8000,
        lane >= 0x8000 and " urgent" or "")
    if 32 + len > tvb:len() then
        tree:add_proto_expert_info(e_length, "the header's length runs past the datagram")
        pinfo.cols.info = info
        return tvb:len()
    end
    local rest = tvb:len() - 32 - len
    -- Encrypted ([auth] mode encrypt): the CRC is over the plaintext, and
    -- the payload is the AEAD's ciphertext, unreadable without the key.
    local encrypted = rest == 32 and band(tvb(32 + len + 1, 1):uint(), 1) == 1
    local good = encrypted or frame_crc(tvb, len) == tvb(28, 4):le_uint()
    if not encrypted then
        tree:add(f.crc_ok, good):set_generated()
        if not good then crc_item:add_proto_expert_info(e_crc) end
    end
    if encrypted then
        if len > 0 then tree:add(f.ciphertext, tvb(32, len)) end
        info = info .. string.format(" seq %d, %d bytes encrypted", tvb(16, 4):le_uint(), len)
    elseif ftype == 1 then
        local n = records(tvb, tree, len, tvb(10, 2):le_uint())
        info = info .. string.format(" seq %d base %d, %d records", tvb(16, 4):le_uint(),
            tvb(20, 4):le_uint(), n)
    elseif ftype == 2 then
        ack(tvb, tree, len)
        if len >= 12 then info = info .. string.format(" cum %d", tvb(36, 4):le_uint()) end
    elseif ftype == 3 then
        local name = hello(tvb, tree, len)
        if name then info = info .. " from " .. name end
    else
        tree:add_proto_expert_info(e_malformed, "unknown frame type")
    end
    if rest == 32 then
        local t = 32 + len
        local a = tree:add(f.auth, tvb(t, 32))
        a:add(f.auth_slot, tvb(t, 1))
        local fl = a:add(f.auth_flags, tvb(t + 1, 1))
        fl:add(f.auth_encrypted, tvb(t + 1, 1))
        fl:add(f.auth_aead, tvb(t + 1, 1))
        a:add_le(f.auth_roll, tvb(t + 2, 2))
        a:add_le(f.auth_key_id, tvb(t + 4, 4))
        a:add_le(f.auth_ctr, tvb(t + 8, 8))
        a:add(f.auth_tag, tvb(t + 16, 16))
        info = info .. (encrypted and " [encrypted]" or " [auth]")
    elseif rest ~= 0 then
        tree:add_proto_expert_info(e_length,
            string.format("%d bytes after the payload (an auth trailer is 32)", rest))
    end
    if not good then info = info .. " [BAD CRC]" end
    pinfo.cols.info = info
    return tvb:len()
end

local udp = DissectorTable.get("udp.port")
local registered = 0
local function register_port()
    if registered ~= 0 then udp:remove(registered, gw) end
    registered = gw.prefs.port
    udp:add(registered, gw) -- takes the port from any other dissector (HCrt on 47000)
end
register_port()
gw.prefs_changed = register_port

local function heuristic(tvb, pinfo, root)
    if not looks_like_gridwire(tvb) or types[tvb(3, 1):uint()] == nil then return false end
    gw.dissector(tvb, pinfo, root)
    return true
end
gw:register_heuristic("udp", heuristic)
