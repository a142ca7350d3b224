/*
 * The C bindings of MPI_T's event functions (MPI 4.1 section 16.3.8): each
 * PMPI_T_ function refuses to run before MPI_T_init_thread, as Open MPI's
 * other MPI_T functions do (ompi/mpi/tool/pvar_read.c:38), then does the
 * work in ompi_spc_events.c; the MPI_T_ name is a weak alias of it, which
 * is what Open MPI's profiling layer makes of its other MPI_T functions
 * where weak symbols exist (ompi/mpi/tool/pvar_read.c:20-22).  Built by
 * patch "mpit: MPI_T events, raised in ob1", with the
 * declarations it adds to mpi.h.
 */
#include "ompi_config.h"

#include "ompi/mpi/tool/mpit-internal.h"
#include "ompi/runtime/ompi_spc_events.h"

/* X(name, parameters, arguments): MPI_T_<name> calls ompi_mpit_<name>. */
#define OMPI_SPC_EVENT_BINDINGS(X)                                                                  \
    X(event_get_num, (int *num_events), (num_events))                                               \
    X(event_get_info,                                                                               \
      (int event_index, char *name, int *name_len, int *verbosity,                                  \
       MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[], int *num_elements,    \
       MPI_T_enum *enumtype, MPI_Info *info, char *desc, int *desc_len, int *bind),                 \
      (event_index, name, name_len, verbosity, array_of_datatypes, array_of_displacements,          \
       num_elements, enumtype, info, desc, desc_len, bind))                                         \
    X(event_get_index, (const char *name, int *event_index), (name, event_index))                   \
    X(event_handle_alloc,                                                                           \
      (int event_index, void *obj_handle, MPI_Info info,                                            \
       MPI_T_event_registration *event_registration),                                               \
      (event_index, obj_handle, info, event_registration))                                          \
    X(event_handle_set_info, (MPI_T_event_registration event_registration, MPI_Info info),          \
      (event_registration, info))                                                                   \
    X(event_handle_get_info, (MPI_T_event_registration event_registration, MPI_Info *info_used),    \
      (event_registration, info_used))                                                              \
    X(event_register_callback,                                                                      \
      (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, MPI_Info info,      \
       void *user_data, MPI_T_event_cb_function *event_cb_function),                                \
      (event_registration, cb_safety, info, user_data, event_cb_function))                          \
    X(event_callback_set_info,                                                                      \
      (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety, MPI_Info info),     \
      (event_registration, cb_safety, info))                                                        \
    X(event_callback_get_info,                                                                      \
      (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,                     \
       MPI_Info *info_used),                                                                        \
      (event_registration, cb_safety, info_used))                                                   \
    X(event_handle_free,                                                                            \
      (MPI_T_event_registration event_registration, void *user_data,                                \
       MPI_T_event_free_cb_function *free_cb_function),                                             \
      (event_registration, user_data, free_cb_function))                                            \
    X(event_set_dropped_handler,                                                                    \
      (MPI_T_event_registration event_registration,                                                 \
       MPI_T_event_dropped_cb_function *dropped_cb_function),                                       \
      (event_registration, dropped_cb_function))                                                    \
    X(event_read, (MPI_T_event_instance event_instance, int element_index, void *buffer),           \
      (event_instance, element_index, buffer))                                                      \
    X(event_copy, (MPI_T_event_instance event_instance, void *buffer), (event_instance, buffer))    \
    X(event_get_timestamp, (MPI_T_event_instance event_instance, MPI_Count *event_timestamp),       \
      (event_instance, event_timestamp))                                                            \
    X(event_get_source, (MPI_T_event_instance event_instance, int *source_index),                   \
      (event_instance, source_index))                                                               \
    X(source_get_num, (int *num_sources), (num_sources))                                            \
    X(source_get_info,                                                                              \
      (int source_index, char *name, int *name_len, char *desc, int *desc_len,                      \
       MPI_T_source_order *ordering, MPI_Count *ticks_per_second, MPI_Count *max_ticks,             \
       MPI_Info *info),                                                                             \
      (source_index, name, name_len, desc, desc_len, ordering, ticks_per_second, max_ticks, info))  \
    X(source_get_timestamp, (int source_index, MPI_Count *timestamp), (source_index, timestamp))

#define OMPI_SPC_EVENT_BINDING_(name, parameters, arguments)                   \
    int PMPI_T_##name parameters                                               \
    {                                                                          \
        if (!mpit_is_initialized()) {                                          \
            return MPI_T_ERR_NOT_INITIALIZED;                                  \
        }                                                                      \
        return ompi_mpit_##name arguments;                                     \
    }                                                                          \
    int MPI_T_##name parameters __attribute__((weak, alias("PMPI_T_" #name)));

OMPI_SPC_EVENT_BINDINGS(OMPI_SPC_EVENT_BINDING_)
