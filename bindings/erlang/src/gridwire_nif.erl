%% SPDX-License-Identifier: BSD-3-Clause
%% The NIF over libgridwire (c_src/gridwire_nif.c). Not an API: gridwire
%% and gridwire_chan use it.
-module(gridwire_nif).
-export([open/2, close/1, reconnect/2, register/5, unregister/3, nodes/1, send/5, cast/5,
         publish/4,
         call/6, forget/2, respond/7, drain/2, local_node/1, node_up/2,
         stats/1, endpoint_id/1]).
-on_load(load/0).

load() ->
    %% Installed: the application's priv folder; in the build tree: beside the beams.
    Dir = case code:priv_dir(gridwire) of
              {error, bad_name} -> filename:dirname(code:which(?MODULE));
              Priv -> case filelib:is_file(filename:join(Priv, "gridwire_nif.so")) of
                          true -> Priv;
                          false -> filename:dirname(code:which(?MODULE))
                      end
          end,
    erlang:load_nif(filename:join(Dir, "gridwire_nif"), 0).

-define(NIF, erlang:nif_error(nif_not_loaded)).
open(_Path, _Index) -> ?NIF.
close(_Chan) -> ?NIF.
reconnect(_Chan, _Path) -> ?NIF.
register(_Chan, _Name, _Pid, _Kind, _Raw) -> ?NIF.
unregister(_Chan, _Name, _Pid) -> ?NIF.
nodes(_Chan) -> ?NIF.
send(_Chan, _Node, _Endpoint, _IoData, _Urgent) -> ?NIF.
cast(_Chan, _Node, _Service, _IoData, _Urgent) -> ?NIF.
publish(_Chan, _Topic, _IoData, _Urgent) -> ?NIF.
call(_Chan, _Node, _Service, _IoData, _TimeoutMs, _Urgent) -> ?NIF.
forget(_Chan, _CallId) -> ?NIF.
respond(_Chan, _Node, _Sender, _CallId, _Failed, _IoData, _Urgent) -> ?NIF.
drain(_Chan, _Max) -> ?NIF.
local_node(_Chan) -> ?NIF.
node_up(_Chan, _Node) -> ?NIF.
stats(_Chan) -> ?NIF.
endpoint_id(_Name) -> ?NIF.
